package stages

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/internal/node"
)

// Check is one validation of what a stage produced, read back from the node.
type Check struct {
	Name string `json:"name"`
	// Live checks ask something running (etcd, the API, the MCS) rather
	// than read files.
	Live bool                                         `json:"live,omitempty"`
	Run  func(ctx context.Context, e *CheckEnv) error `json:"-"`
}

// CheckEnv is what a check may look at.
type CheckEnv struct {
	Node node.Node
	Vars Vars
	Now  time.Time
}

// ValidateOptions change what Validate runs.
type ValidateOptions struct {
	// SkipLive leaves out checks of running services.
	SkipLive bool
	// Now is the time certificates must be valid at (default time.Now()).
	Now time.Time
}

// Validate runs the checks of stage s against the node. It returns every
// result, grouped under the stage's label ("07 etcd-bootstrap") with the
// reason of a failure as its detail; a failed check does not stop the
// others.
func Validate(ctx context.Context, n node.Node, s *Stage, v Vars, opts ValidateOptions) []check.Result {
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	env := &CheckEnv{Node: n, Vars: v, Now: now}
	var out []check.Result
	for _, c := range s.Checks {
		if c.Live && opts.SkipLive {
			continue
		}
		r := check.Result{Group: s.Label(), Name: c.Name, OK: true}
		if err := c.Run(ctx, env); err != nil {
			r.OK, r.Detail = false, err.Error()
		}
		out = append(out, r)
	}
	return out
}

// ---- check builders ----

func opt(p string) string { return path.Join(AssetDir, p) }

func marker(name string) Check {
	p := opt(name)
	return Check{Name: "marker " + p, Run: func(ctx context.Context, e *CheckEnv) error {
		_, err := e.Node.Stat(ctx, p)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s is missing: the stage has not finished (run it, then look at its output log)", p)
		}
		return err
	}}
}

// file checks a regular file exists, is not empty and, when mode is not
// zero, has exactly that mode.
func file(p string, mode fs.FileMode) Check {
	name := "file " + p
	if mode != 0 {
		name += fmt.Sprintf(" (mode %04o)", mode)
	}
	return Check{Name: name, Run: func(ctx context.Context, e *CheckEnv) error {
		fi, err := statFile(ctx, e.Node, p)
		if err != nil {
			return err
		}
		if fi.IsDir {
			return fmt.Errorf("%s is a directory, want a file", p)
		}
		if fi.Size == 0 {
			return fmt.Errorf("%s is empty", p)
		}
		if mode != 0 && fi.Mode != mode {
			return fmt.Errorf("%s has mode %04o, want %04o", p, fi.Mode, mode)
		}
		return nil
	}}
}

func dir(p string) Check {
	return Check{Name: "directory " + p, Run: func(ctx context.Context, e *CheckEnv) error {
		fi, err := statFile(ctx, e.Node, p)
		if err != nil {
			return err
		}
		if !fi.IsDir {
			return fmt.Errorf("%s is not a directory", p)
		}
		return nil
	}}
}

func absent(p, why string) Check {
	return Check{Name: "absent " + p, Run: func(ctx context.Context, e *CheckEnv) error {
		_, err := e.Node.Stat(ctx, p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("%s still exists: %s", p, why)
	}}
}

func statFile(ctx context.Context, n node.Node, p string) (node.FileInfo, error) {
	fi, err := n.Stat(ctx, p)
	if errors.Is(err, fs.ErrNotExist) {
		return fi, fmt.Errorf("%s is missing", p)
	}
	return fi, err
}

func readFile(ctx context.Context, n node.Node, p string) ([]byte, error) {
	data, err := n.ReadFile(ctx, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is missing", p)
	}
	return data, err
}

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
	return Check{Name: fmt.Sprintf("manifest %s is %s %s", p, kind, name), Run: func(ctx context.Context, e *CheckEnv) error {
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

// listDir lists a directory on the node.
func listDir(ctx context.Context, n node.Node, d string) ([]string, error) {
	if _, err := statFile(ctx, n, d); err != nil {
		return nil, err
	}
	out, err := node.Output(ctx, n, "ls -A1 -- "+node.ShellQuote(d))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", d, err)
	}
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			names = append(names, l)
		}
	}
	return names, nil
}

// findObject looks through the manifests of directory d for an object of
// kind (and name, when given) and returns its file and document.
func findObject(ctx context.Context, n node.Node, d, kind, name string) (string, []byte, error) {
	names, err := listDir(ctx, n, d)
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
	return Check{Name: fmt.Sprintf("static pod %s/%s in %s", w.Namespace, w.Name, p), Run: func(ctx context.Context, e *CheckEnv) error {
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
		names, err := listDir(ctx, e.Node, d)
		if err != nil {
			return err
		}
		for _, f := range names {
			p := path.Join(d, f)
			data, err := readFile(ctx, e.Node, p)
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

// cert checks a PEM certificate (bundle) is present and every certificate
// in it is valid now.
func cert(p string) Check {
	return Check{Name: "certificate " + p, Run: func(ctx context.Context, e *CheckEnv) error {
		data, err := readFile(ctx, e.Node, p)
		if err != nil {
			return err
		}
		n := 0
		for {
			var b *pem.Block
			b, data = pem.Decode(data)
			if b == nil {
				break
			}
			if b.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return fmt.Errorf("%s: certificate %d does not parse: %v", p, n+1, err)
			}
			n++
			if e.Now.After(c.NotAfter) {
				return fmt.Errorf("%s: certificate %q expired at %s: the installer's certificates live 24h for the bootstrap (regenerate the assets with `bootlab lab up`)", p, c.Subject.CommonName, c.NotAfter.UTC().Format(time.RFC3339))
			}
			if e.Now.Before(c.NotBefore) {
				return fmt.Errorf("%s: certificate %q is not valid before %s: is the node's clock right?", p, c.Subject.CommonName, c.NotBefore.UTC().Format(time.RFC3339))
			}
		}
		if n == 0 {
			return fmt.Errorf("%s holds no PEM certificate", p)
		}
		return nil
	}}
}

// key checks a PEM private key with mode 0600.
func key(p string) Check {
	return Check{Name: fmt.Sprintf("private key %s (mode 0600)", p), Run: func(ctx context.Context, e *CheckEnv) error {
		if err := file(p, 0o600).Run(ctx, e); err != nil {
			return err
		}
		data, err := readFile(ctx, e.Node, p)
		if err != nil {
			return err
		}
		b, _ := pem.Decode(data)
		if b == nil || !strings.Contains(b.Type, "PRIVATE KEY") {
			return fmt.Errorf("%s holds no PEM private key", p)
		}
		return nil
	}}
}

// envFile checks a KEY=value file sets every key to something.
func envFile(p string, keys ...string) Check {
	return Check{Name: "settings in " + p, Run: func(ctx context.Context, e *CheckEnv) error {
		data, err := readFile(ctx, e.Node, p)
		if err != nil {
			return err
		}
		have := map[string]string{}
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok {
				have[k] = strings.Trim(v, `'"`)
			}
		}
		for _, k := range keys {
			if have[k] == "" {
				return fmt.Errorf("%s does not set %s: rerun stage 02 (`bootlab stage run 02`)", p, k)
			}
		}
		return nil
	}}
}

// featureGates checks api-bootstrap resolved the gates in 99_feature-gate.yaml.
func featureGates(p string) Check {
	return Check{Name: "feature gates resolved in " + p, Run: func(ctx context.Context, e *CheckEnv) error {
		data, err := readFile(ctx, e.Node, p)
		if err != nil {
			return err
		}
		var fg struct {
			Kind   string `json:"kind"`
			Status struct {
				FeatureGates []struct {
					Version string `json:"version"`
				} `json:"featureGates"`
			} `json:"status"`
		}
		if err := yaml.Unmarshal(data, &fg); err != nil {
			return fmt.Errorf("%s does not parse: %v", p, err)
		}
		if fg.Kind != "FeatureGate" {
			return fmt.Errorf("%s is a %q, want a FeatureGate", p, fg.Kind)
		}
		if len(fg.Status.FeatureGates) == 0 {
			return fmt.Errorf("%s has no status.featureGates: api-bootstrap did not resolve the gates for this payload", p)
		}
		return nil
	}}
}

// https asks url from the node with curl and wants HTTP 200 and, when
// given, a body containing want.
func https(name, url, want string, curlArgs ...string) Check {
	return Check{Name: name, Live: true, Run: func(ctx context.Context, e *CheckEnv) error {
		u := url
		u = strings.ReplaceAll(u, "$API_URL", e.Vars.APIURL)
		u = strings.ReplaceAll(u, "$API_INT_URL", e.Vars.APIIntURL)
		args := append([]string{"curl", "--silent", "--show-error", "--max-time", "10", "--write-out", `'\n%{http_code}'`}, curlArgs...)
		cmd := strings.Join(args, " ") + " " + node.ShellQuote(u)
		out, err := node.Output(ctx, e.Node, cmd)
		if err != nil {
			return fmt.Errorf("GET %s from %s: %w", u, e.Node, err)
		}
		body, codeStr := "", strings.TrimSpace(string(out))
		if i := strings.LastIndexByte(codeStr, '\n'); i >= 0 {
			body, codeStr = codeStr[:i], codeStr[i+1:]
		}
		code, _ := strconv.Atoi(codeStr)
		if code != 200 {
			return fmt.Errorf("GET %s answered HTTP %s, want 200 (body %q)", u, codeStr, trim(body, 120))
		}
		if want != "" && !strings.Contains(body, want) {
			return fmt.Errorf("GET %s answered %q, want %q", u, trim(body, 120), want)
		}
		return nil
	}}
}

func trim(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
