package shims

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/bootlab/bootlab/internal/guestcluster/operators/renders"
	"github.com/bootlab/bootlab/internal/wire"
)

// releasePayload is the component name of the release image itself, whose
// entrypoint is the cluster-version-operator.
const releasePayload = renders.ReleasePayload

// componentOf names the image-references entry of pull spec image
// (releasePayload for the release image itself).
func componentOf(r *wire.RehearsalRelease, image string) (string, bool) {
	if image == r.Image {
		return releasePayload, true
	}
	for name, ref := range r.Components {
		if ref == image {
			return name, true
		}
	}
	return "", false
}

// podmanRun is a parsed `podman run`.
type podmanRun struct {
	name, entrypoint string
	env              []string
	volumes          map[string]string // container path -> host path
	image            string
	args             []string
}

// parsePodmanRun reads podman run's options up to the image.
func parsePodmanRun(args []string) (*podmanRun, error) {
	r := &podmanRun{volumes: map[string]string{}}
	withValue := map[string]bool{"--name": true, "--volume": true, "-v": true, "--env": true, "-e": true,
		"--entrypoint": true, "--net": true, "--network": true, "--pull": true, "--user": true, "-u": true, "--workdir": true, "-w": true}
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		opt, val, hasVal := strings.Cut(args[0], "=")
		args = args[1:]
		if withValue[opt] && !hasVal {
			if len(args) == 0 {
				return nil, fmt.Errorf("option %s needs a value", opt)
			}
			val, args = args[0], args[1:]
		}
		switch opt {
		case "--name":
			r.name = val
		case "--entrypoint":
			r.entrypoint = val
		case "--env", "-e":
			r.env = append(r.env, val)
		case "--volume", "-v":
			parts := strings.Split(val, ":")
			if len(parts) < 2 {
				return nil, fmt.Errorf("--volume %q: want HOST:CONTAINER[:OPTIONS]", val)
			}
			r.volumes[parts[1]] = parts[0]
		}
	}
	if len(args) == 0 {
		return nil, errors.New("no image given")
	}
	r.image, r.args = args[0], args[1:]
	return r, nil
}

// HostPath maps a path inside the container to the host through the volumes.
func (r *podmanRun) HostPath(p string) string {
	best := ""
	for c := range r.volumes {
		if (p == c || strings.HasPrefix(p, strings.TrimSuffix(c, "/")+"/")) && len(c) > len(best) {
			best = c
		}
	}
	if best == "" {
		return p
	}
	return filepath.Join(r.volumes[best], strings.TrimPrefix(p, best))
}

// flags reads --key=value and --key value arguments.
func flags(args []string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			v, i = args[i+1], i+1
		}
		out[k] = v
	}
	return out
}

// podmanMain plays `podman run` of the release's images: image_for and
// image-references from the release metadata, the operators' commands
// (played by bootlab), the node's real etcdctl for the etcd image.
func (t *Tools) podmanMain(args []string, stdout, stderr io.Writer) int {
	say := func(format string, a ...any) { podmanSay(stderr, format, a...) }
	if len(args) == 0 || args[0] != "run" {
		say("only `podman run` of the release's images is played on the rehearsal bootstrap (no container runtime here)")
		return 125
	}
	run, err := parsePodmanRun(args[1:])
	if err != nil {
		say("%v", err)
		return 125
	}
	rel, err := t.release()
	if err != nil {
		say("%v", err)
		return 125
	}
	comp, ok := componentOf(rel, run.image)
	if !ok {
		say("%s is not an image of release %s (%s)", run.image, rel.Version, rel.Image)
		return 125
	}
	cmd := run.args
	if run.entrypoint != "" {
		cmd = append([]string{run.entrypoint}, cmd...)
	}
	if code, played := t.podmanCommand(run, rel, comp, cmd, stdout, stderr); played {
		return code
	}
	render, known := renders.Renders{ProbeConfigPath: t.ProbeConfigPath}.ByComponent()[comp]
	if !known || !containsRender(cmd) {
		say("%s (%s) %s is not played on the rehearsal bootstrap", comp, run.image, strings.Join(cmd, " "))
		return 125
	}
	say("%s render, played by bootlab: it writes the files the operator's render writes (certificates signed by the lab CA)", nameOr(comp, "cluster-version-operator"))
	if err := render(run, rel, flags(mapPaths(run, cmd))); err != nil {
		fmt.Fprintf(stderr, "%s render: %v\n", nameOr(comp, "cluster-version-operator"), err)
		return 1
	}
	return 0
}

// podmanSay writes a line of the podman stand-in to stderr.
func podmanSay(stderr io.Writer, format string, a ...any) {
	fmt.Fprintf(stderr, "podman (bootlab rehearsal stand-in): "+format+"\n", a...)
}

// podmanCommand plays the commands of component comp's image that are not
// renders; played is false for the others.
func (t *Tools) podmanCommand(run *podmanRun, rel *wire.RehearsalRelease, comp string, cmd []string, stdout, stderr io.Writer) (code int, played bool) {
	say := func(format string, a ...any) { podmanSay(stderr, format, a...) }
	// done reports err as what's failure, or success.
	done := func(what string, err error) (int, bool) {
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", what, err)
			return 1, true
		}
		return 0, true
	}
	switch {
	case comp == releasePayload && len(cmd) == 2 && cmd[0] == "image":
		ref, ok := rel.Components[cmd[1]]
		if !ok {
			say("release %s has no image %q", rel.Version, cmd[1])
			return 1, true
		}
		say("the release payload's image-references name %s", cmd[1])
		fmt.Fprintln(stdout, ref)
		return 0, true
	case comp == releasePayload && len(cmd) == 2 && cmd[0] == "cat" && cmd[1] == "/release-manifests/image-references":
		data, err := imageReferences(rel)
		if err != nil {
			say("%v", err)
			return 1, true
		}
		say("the release payload's /release-manifests/image-references")
		fmt.Fprintln(stdout, string(data))
		return 0, true
	case comp == "machine-config-operator" && len(cmd) > 0 && cmd[0] == "bootstrap":
		say("machine-config-operator bootstrap, played by bootlab: it writes the files the operator writes")
		return done("machine-config-operator bootstrap", renders.MCO(run, rel, flags(mapPaths(run, cmd))))
	case comp == "cluster-bootstrap" && len(cmd) > 0 && cmd[0] == "start":
		say("cluster-bootstrap start, played by bootlab: it starts the temporary control plane's pods, waits for the bootstrap API and the masters', then tears the temporary control plane down")
		f := flags(mapPaths(run, cmd))
		if f["asset-dir"] == "" {
			return done("cluster-bootstrap", errors.New("--asset-dir is required"))
		}
		return done("cluster-bootstrap", t.ClusterBootstrap.Run(f["asset-dir"], run.HostPath("/etc/kubernetes"), f["required-pods"], stdout, stderr))
	case comp == "etcd" && len(cmd) > 0 && cmd[0] == "etcdctl":
		say("running the node's real etcdctl for the etcd image")
		return execReal("/usr/bin/etcdctl", mapPaths(run, cmd[1:]), run.env), true
	case comp == "cluster-etcd-operator" && len(cmd) > 1 && filepath.Base(cmd[0]) == "cluster-etcd-operator" && cmd[1] == "wait-for-ceo":
		say("cluster-etcd-operator wait-for-ceo, played by bootlab: it reads the etcd operator's status (etcds/cluster) from the real API, where the first master's etcd operator stand-in writes it from the real etcd member list")
		return done("wait-for-ceo", t.CEO.Run(flags(mapPaths(run, cmd))["kubeconfig"], stdout))
	}
	return 0, false
}

func containsRender(cmd []string) bool {
	for _, c := range cmd {
		if c == "render" || strings.HasSuffix(c, "/render") {
			return true
		}
	}
	return false
}

func nameOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// mapPaths rewrites container paths in arguments to host paths.
func mapPaths(run *podmanRun, args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(v, "/") {
			out[i] = k + "=" + run.HostPath(v)
		} else if strings.HasPrefix(a, "/") {
			out[i] = run.HostPath(a)
		} else {
			out[i] = a
		}
	}
	return out
}

// execReal runs a real program with the container's environment added.
func execReal(path string, args, env []string) int {
	c := exec.Command(path, args...)
	c.Env = append(os.Environ(), env...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := c.Run(); err != nil {
		var ee interface{ ExitCode() int }
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, err)
		return 127
	}
	return 0
}

// imageReferences is the release's /release-manifests/image-references:
// an ImageStream naming every component's pull spec.
func imageReferences(rel *wire.RehearsalRelease) ([]byte, error) {
	var tags []any
	for _, name := range wire.ReleaseComponents {
		tags = append(tags, map[string]any{"name": name, "from": map[string]any{"kind": "DockerImage", "name": rel.Components[name]}})
	}
	return json.MarshalIndent(map[string]any{"kind": "ImageStream", "apiVersion": "image.openshift.io/v1",
		"metadata": map[string]any{"name": rel.Version, "creationTimestamp": nil},
		"spec":     map[string]any{"tags": tags}}, "", "  ")
}
