package stages

import (
	"bytes"
	"fmt"
	"io/fs"
	"regexp"

	"github.com/bootlab/bootlab/internal/node"
)

// Vars are the settings a stage script needs, filled in by bootlab at the
// top of the script it sends (the library's defaults apply when a learner
// runs the file by hand).
type Vars struct {
	// Version selects the flags and steps of that release.
	Version Version
	// APIURL and APIIntURL are the API host names (api.<cluster>.<domain>).
	APIURL    string
	APIIntURL string
	// ReleaseImage overrides the release image; empty means the one the
	// installer wrote into /usr/local/bin/release-image.sh on the node.
	ReleaseImage string
	// ClusterProfile is passed to the CVO render when set.
	ClusterProfile string
	// Force redoes steps whose marker exists.
	Force bool
	// ServiceName names the service records file; default "bootkube".
	ServiceName string
	// ForceThrough is the last stage a forced run reruns after this one
	// (BOOTLAB_FORCE_THROUGH): later stages up to it are redone, so the
	// script's own --force check lets them have run. 0: the stage itself.
	ForceThrough int
}

// libraryLine is the line of every stage script that sources the library;
// the rendered script has the library inlined there instead.
var libraryLine = regexp.MustCompile(`(?m)^.*# bootlab: library\n`)

// RenderScript returns the self-contained script of stage s: its settings,
// the shared library and the stage's own script, ready to run with bash.
// fsys is the scripts tree (scripts.FS).
func RenderScript(fsys fs.FS, s *Stage, v Vars) ([]byte, error) {
	lib, err := fs.ReadFile(fsys, "lib/bootkube.sh")
	if err != nil {
		return nil, fmt.Errorf("read script library: %w", err)
	}
	body, err := fs.ReadFile(fsys, s.ScriptFile())
	if err != nil {
		return nil, fmt.Errorf("stage %s: read script: %w", s.Label(), err)
	}
	if !libraryLine.Match(body) {
		return nil, fmt.Errorf("stage %s: %s does not source lib/bootkube.sh with a '# bootlab: library' line", s.Label(), s.ScriptFile())
	}
	service := v.ServiceName
	if service == "" {
		service = "bootkube"
	}
	force := "0"
	if v.Force {
		force = "1"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "#!/usr/bin/env bash\n")
	fmt.Fprintf(&b, "# bootlab stage %s (script %s) for OpenShift %s.\n", s.Label(), s.Script, v.Version)
	fmt.Fprintf(&b, "# This is scripts/%s with scripts/lib/bootkube.sh inlined and its\n", s.ScriptFile())
	fmt.Fprintf(&b, "# settings filled in; bootlab writes it to %s on the node and runs it as root.\n", ScriptDir)
	through := v.ForceThrough
	if through < s.Number {
		through = s.Number
	}
	for _, kv := range [][2]string{
		{"STAGE_NUMBER", s.ID()},
		{"ASSET_DIR", AssetDir},
		{"OPENSHIFT_VERSION", v.Version.String()},
		{"API_URL", v.APIURL},
		{"API_INT_URL", v.APIIntURL},
		{"RELEASE_IMAGE", v.ReleaseImage},
		{"CLUSTER_PROFILE", v.ClusterProfile},
		{"BOOTLAB_FORCE", force},
		{"BOOTLAB_FORCE_THROUGH", fmt.Sprintf("%02d", through)},
		{"SERVICE_NAME", service},
		{"IMAGES_FILE", ImagesFile},
	} {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], shellValue(kv[1]))
	}
	fmt.Fprintf(&b, "\n# ---- scripts/lib/bootkube.sh ----\n")
	b.Write(dropShebang(lib))
	fmt.Fprintf(&b, "\n# ---- scripts/%s ----\n", s.ScriptFile())
	b.Write(libraryLine.ReplaceAll(dropShebang(body), nil))
	return b.Bytes(), nil
}

func dropShebang(b []byte) []byte {
	if bytes.HasPrefix(b, []byte("#!")) {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			return b[i+1:]
		}
	}
	return b
}

var plainValue = regexp.MustCompile(`^[A-Za-z0-9@%+=:,./_-]+$`)

func shellValue(s string) string {
	if s == "" {
		return `""`
	}
	if plainValue.MatchString(s) {
		return s
	}
	return node.ShellQuote(s)
}
