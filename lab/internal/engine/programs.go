package engine

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/bootlab/bootlab/lab/gobuild"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/release"
)

// programs are what `cache build` makes, by name: each returns the
// release's component.
func programs() map[string]func(release.Release) (gobuild.Component, error) {
	return map[string]func(release.Release) (gobuild.Component, error){
		"kubernetes": func(r release.Release) (gobuild.Component, error) { return gobuild.Kubernetes(r.Kubernetes) },
		"etcd":       func(r release.Release) (gobuild.Component, error) { return gobuild.Etcd(r.Etcd.Module) },
	}
}

// Program is one program bootlab builds from the Go module proxy, at the
// version an OpenShift release pins.
type Program struct {
	Name      string
	Version   string
	OpenShift string
	comp      gobuild.Component
}

// UnknownProgramError is LookupProgram's error for a name it does not know
// (kubernetes and etcd are the ones it knows).
type UnknownProgramError struct{ Name string }

func (e *UnknownProgramError) Error() string {
	return fmt.Sprintf("bootlab builds no program %q", e.Name)
}

// UnknownReleaseError is LookupProgram's error for an OpenShift version
// bootlab has no pins for.
type UnknownReleaseError struct{ Err error }

func (e *UnknownReleaseError) Error() string { return e.Err.Error() }
func (e *UnknownReleaseError) Unwrap() error { return e.Err }

// LookupProgram is program name of OpenShift release version, or why not.
func LookupProgram(name, version string) (*Program, error) {
	mk, ok := programs()[name]
	if !ok {
		return nil, &UnknownProgramError{Name: name}
	}
	rel, err := release.For(version)
	if err != nil {
		return nil, &UnknownReleaseError{Err: err}
	}
	comp, err := mk(rel)
	if err != nil {
		return nil, fmt.Errorf("OpenShift %s: %w", rel.OpenShift, err)
	}
	return &Program{Name: comp.Name, Version: comp.Version, OpenShift: rel.OpenShift, comp: comp}, nil
}

// BuiltProgram is a program in the cache: where, and whether this call ran
// go to build it (and how long it took).
type BuiltProgram struct {
	Path  string
	Size  int64
	Built bool
	Took  time.Duration
}

// BuildProgram builds p into the cache under dir unless it is there.
func BuildProgram(ctx context.Context, dir string, p *Program, log *slog.Logger) (*BuiltProgram, error) {
	b, err := gobuild.Ensure(ctx, dir, p.comp, log)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(b.Path)
	if err != nil {
		return nil, err
	}
	return &BuiltProgram{Path: b.Path, Size: fi.Size(), Built: b.Built, Took: b.Took}, nil
}

// LabDirs are home and the directories of the labs under it: what a cache
// export must not include.
func LabDirs(home string) ([]string, error) {
	labs, err := labdir.Find(home)
	if err != nil {
		return nil, err
	}
	dirs := []string{home}
	for _, l := range labs {
		dirs = append(dirs, l.Dir)
	}
	return dirs, nil
}

// LabImages returns the image files every lab under home boots. A lab whose
// state cannot be read stops pruning: its probe image may be in use.
func LabImages(home string) ([]string, error) {
	labs, err := labdir.Find(home)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range labs {
		if l.Err != nil {
			return nil, fmt.Errorf("lab %s (%s): %w: its probe image may be in use, so nothing is pruned; fix or remove that lab first", l.Name, l.Dir, l.Err)
		}
		if l.State == nil || l.State.Spec == nil {
			continue
		}
		img := l.State.Spec.Image
		for _, p := range []string{img.Kernel, img.Initrd, img.Path} {
			if p != "" {
				out = append(out, p)
			}
		}
	}
	return out, nil
}
