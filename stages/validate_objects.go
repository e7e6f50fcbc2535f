package stages

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/node"
)

// object is the part of any Kubernetes manifest a check needs.
type object struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
}

// documents splits a YAML stream into its documents.
func documents(data []byte) [][]byte {
	var out [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), data...), []byte("\n---")) {
		if len(bytes.TrimSpace(d)) > 0 {
			out = append(out, d)
		}
	}
	return out
}

func parseObject(p string, doc []byte) (object, error) {
	var o object
	if err := yaml.Unmarshal(doc, &o); err != nil {
		return o, fmt.Errorf("%s does not parse as a Kubernetes manifest: %v", p, err)
	}
	return o, nil
}

// manifest checks p holds an object of kind (and name, when given).
func manifest(p, kind, name string) Check {
	return Check{Name: fmt.Sprintf("manifest %s is %s %s", p, kind, name), Reads: []string{p}, Run: func(ctx context.Context, e *CheckEnv) error {
		data, err := readFile(ctx, e.Node, p)
		if err != nil {
			return err
		}
		o, err := parseObject(p, data)
		if err != nil {
			return err
		}
		if o.Kind != kind {
			return fmt.Errorf("%s is a %q, want kind %s", p, o.Kind, kind)
		}
		if name != "" && o.Name != name {
			return fmt.Errorf("%s is %s %q, want %q", p, kind, o.Name, name)
		}
		return nil
	}}
}

// listDir lists a directory on the node: one command, and a stat only
// when the listing fails, to say that d is missing.
func listDir(ctx context.Context, n node.Node, d string) ([]string, error) {
	names, err := node.List(ctx, n, d)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is missing", d)
	}
	if err != nil {
		if _, serr := statFile(ctx, n, d); serr != nil {
			return nil, serr
		}
		return nil, fmt.Errorf("list %s: %w", d, err)
	}
	return names, nil
}

// listManifests lists directory d and returns a node that answers for
// the files in it (read in one command when there are several: one read
// each was a command each, seconds for a directory of renders on a TCG
// guest).
func listManifests(ctx context.Context, n node.Node, d string) ([]string, node.Node, error) {
	names, err := listDir(ctx, n, d)
	if err != nil {
		return nil, nil, err
	}
	var paths []string
	for _, f := range names {
		if ext := path.Ext(f); ext == ".yaml" || ext == ".yml" || ext == ".json" {
			paths = append(paths, path.Join(d, f))
		}
	}
	together, err := readTogether(ctx, n, paths)
	if err != nil {
		return nil, nil, err
	}
	return names, together, nil
}

// findObject looks through the manifests of directory d for an object of
// kind (and name, when given) and returns its file and document.
func findObject(ctx context.Context, n node.Node, d, kind, name string) (string, []byte, error) {
	names, n, err := listManifests(ctx, n, d)
	if err != nil {
		return "", nil, err
	}
	var kinds []string
	for _, f := range names {
		if ext := path.Ext(f); ext != ".yaml" && ext != ".yml" && ext != ".json" {
			continue
		}
		p := path.Join(d, f)
		data, err := readFile(ctx, n, p)
		if err != nil {
			return "", nil, err
		}
		for _, doc := range documents(data) {
			o, err := parseObject(p, doc)
			if err != nil {
				return "", nil, err
			}
			if o.Kind == kind && (name == "" || o.Name == name) {
				return p, doc, nil
			}
			kinds = append(kinds, o.Kind+" "+o.Name)
		}
	}
	what := kind
	if name != "" {
		what += " " + name
	}
	if len(kinds) == 0 {
		return "", nil, fmt.Errorf("%s has no manifests, want a %s", d, what)
	}
	return "", nil, fmt.Errorf("no %s in %s (found %d other objects, e.g. %s)", what, d, len(kinds), kinds[0])
}

func manifestIn(d, kind, name string) Check {
	return Check{Name: fmt.Sprintf("%s has %s %s", d, kind, name), Run: func(ctx context.Context, e *CheckEnv) error {
		_, _, err := findObject(ctx, e.Node, d, kind, name)
		return err
	}}
}

// PodWant is what a static pod manifest must show.
type PodWant struct {
	Namespace, Name string
	Containers      []string
	InitContainers  []string
	HostPaths       []string
}

func checkPod(p string, doc []byte, w PodWant) error {
	var pod corev1.Pod
	if err := yaml.Unmarshal(doc, &pod); err != nil {
		return fmt.Errorf("%s does not parse as a Pod: %v", p, err)
	}
	if pod.Kind != "Pod" {
		return fmt.Errorf("%s is a %q, want a Pod", p, pod.Kind)
	}
	if pod.Namespace != w.Namespace || pod.Name != w.Name {
		return fmt.Errorf("%s is pod %s/%s, want %s/%s", p, pod.Namespace, pod.Name, w.Namespace, w.Name)
	}
	if !pod.Spec.HostNetwork {
		return fmt.Errorf("%s: pod %s/%s does not use hostNetwork: a bootstrap static pod must (nothing else has a network yet)", p, w.Namespace, w.Name)
	}
	names := func(cs []corev1.Container) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	have, haveInit := names(pod.Spec.Containers), names(pod.Spec.InitContainers)
	for _, c := range w.Containers {
		if !slices.Contains(have, c) {
			return fmt.Errorf("%s: pod %s/%s has containers %v, want %q among them", p, w.Namespace, w.Name, have, c)
		}
	}
	for _, c := range w.InitContainers {
		if !slices.Contains(haveInit, c) {
			return fmt.Errorf("%s: pod %s/%s has init containers %v, want %q among them", p, w.Namespace, w.Name, haveInit, c)
		}
	}
	var hostPaths []string
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			hostPaths = append(hostPaths, v.HostPath.Path)
		}
	}
	for _, hp := range w.HostPaths {
		if !slices.Contains(hostPaths, hp) {
			return fmt.Errorf("%s: pod %s/%s mounts host paths %v, want %s among them", p, w.Namespace, w.Name, hostPaths, hp)
		}
	}
	return nil
}

// staticPod checks the pod manifest at p.
func staticPod(p string, w PodWant) Check {
	return Check{Name: fmt.Sprintf("static pod %s/%s in %s", w.Namespace, w.Name, p), Reads: []string{p}, Run: func(ctx context.Context, e *CheckEnv) error {
		data, err := readFile(ctx, e.Node, p)
		if err != nil {
			return err
		}
		return checkPod(p, data, w)
	}}
}

// staticPodIn finds the pod in directory d (file names differ by release).
func staticPodIn(d string, w PodWant) Check {
	return Check{Name: fmt.Sprintf("static pod %s/%s in %s", w.Namespace, w.Name, d), Run: func(ctx context.Context, e *CheckEnv) error {
		names, n, err := listManifests(ctx, e.Node, d)
		if err != nil {
			return err
		}
		for _, f := range names {
			p := path.Join(d, f)
			data, err := readFile(ctx, n, p)
			if err != nil {
				return err
			}
			o, err := parseObject(p, data)
			if err != nil {
				return err
			}
			if o.Kind == "Pod" && o.Namespace == w.Namespace && o.Name == w.Name {
				return checkPod(p, data, w)
			}
		}
		return fmt.Errorf("no pod %s/%s in %s", w.Namespace, w.Name, d)
	}}
}
