package lab

import (
	"path/filepath"
	"strings"

	"github.com/bootlab/bootlab/lab/spec"
)

// NestedDirs refuses a spec whose labDir or storage.poolDir lies inside a
// directory of another lab under home (its lab or pool directory), or
// holds one: `lab down` of either would remove the other's files. A pool
// directory on a remote hypervisor is compared only with the pools of labs
// on the same URI. It returns a *spec.ValidationError naming the field, or
// nil.
func NestedDirs(home string, s *spec.Spec) error {
	labs, err := FindLabs(home)
	if err != nil {
		return err
	}
	var errs []spec.FieldError
	for _, mine := range ownDirs(s) {
		for _, o := range labs {
			if o.Spec == nil || o.Name == s.Name || filepath.Clean(o.Dir) == filepath.Clean(s.LabDir) {
				continue
			}
			for _, theirs := range append(ownDirs(o.Spec), dirOf{"labDir", o.Dir, true, ""}) {
				if !mine.local || !theirs.local {
					if mine.local || theirs.local || mine.uri != theirs.uri {
						continue
					}
				}
				if rel := nesting(mine.path, theirs.path); rel != "" {
					errs = append(errs, spec.FieldError{Field: mine.field,
						Msg: mine.path + " is " + rel + " lab " + o.Name + "'s " + theirs.what() + " " + theirs.path +
							": down of either lab would remove the other's files; give this lab a directory of its own (the default, when the line is left out)"})
					break
				}
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &spec.ValidationError{Errs: dedupe(errs)}
}

// dirOf is one directory a lab owns: which field names it, and where.
type dirOf struct {
	field, path string
	// local is true for a path on this machine; uri names the hypervisor
	// whose machine holds it otherwise.
	local bool
	uri   string
}

func (d dirOf) what() string {
	if d.field == "labDir" {
		return "lab directory"
	}
	return "pool directory"
}

func ownDirs(s *spec.Spec) []dirOf {
	out := []dirOf{{"labDir", filepath.Clean(s.LabDir), true, ""}}
	if s.Storage.PoolDir != "" {
		out = append(out, dirOf{"storage.poolDir", filepath.Clean(s.Storage.PoolDir), !s.Remote(), s.Libvirt.URI})
	}
	return out
}

// nesting says how a relates to b: "inside", "the parent of" or "the
// same directory as"; "" when neither holds the other.
func nesting(a, b string) string {
	switch {
	case a == b:
		return "the same directory as"
	case strings.HasPrefix(a, b+"/"):
		return "inside"
	case strings.HasPrefix(b, a+"/"):
		return "the parent of"
	}
	return ""
}

// dedupe keeps the first error of each field.
func dedupe(errs []spec.FieldError) []spec.FieldError {
	seen := map[string]bool{}
	var out []spec.FieldError
	for _, e := range errs {
		if !seen[e.Field] {
			seen[e.Field] = true
			out = append(out, e)
		}
	}
	return out
}
