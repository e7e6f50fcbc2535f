package installer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/atomicfile"
	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/kube"
	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/internal/wire"
)

// A stand-in for the kube-apiserver operator's installer pod on a
// rehearsal master. Upstream, the operator (running on the bootstrap's
// API) copies the revision's secrets and configmaps of
// openshift-kube-apiserver into each master's static-pod-resources and
// writes the kube-apiserver pod into its manifests directory; the
// master's kubelet starts it. Here the agent plays the installer: it
// reads the same objects from the real API (stage 13 created them from
// /opt/openshift/manifests), writes the same files and the pod, and the
// kubelet stand-in starts the real kube-apiserver.

// ObjectSource reads a secret's or configmap's data from the cluster API.
type ObjectSource interface {
	// Data returns the object's data (secrets decoded); kind is
	// "secrets" or "configmaps".
	Data(ctx context.Context, kind, namespace, name string) (map[string][]byte, error)
}

// Installer installs a master's revision of one operand (the
// kube-apiserver, the controller manager or the scheduler), as that
// operator's installer pod does.
type Installer struct {
	Log *slog.Logger
	// Operand is what to install (controlplane.KubeAPIServerOperand, ...).
	Operand controlplane.Operand
	Source  ObjectSource
	// StaticPodDir is the kubelet's manifests directory.
	StaticPodDir string
	Input        controlplane.MasterInput
	// Image is the release's hyperkube image, for the pod's record.
	Image string
}

// Install copies the revision's files and then writes the pod, so the
// kubelet never starts it with half its files. The error names the object
// that is missing and what creates it.
func (k *Installer) Install(ctx context.Context) error {
	o := k.Operand
	who := string(o.Component) + " installer stand-in"
	objs := map[string]map[string][]byte{}
	for _, r := range o.Resources() {
		id := r.Kind + "/" + r.Name
		data, ok := objs[id]
		if !ok {
			var err error
			if data, err = k.Source.Data(ctx, r.Kind, o.Namespace, r.Name); err != nil {
				return fmt.Errorf("%s: read %s %s/%s (%s): %w", who, r.Kind, o.Namespace, r.Name, whoMakes(r), err)
			}
			objs[id] = data
		}
		content, ok := data[r.Key]
		if !ok {
			return fmt.Errorf("%s: %s %s/%s has no key %q", who, r.Kind, o.Namespace, r.Name, r.Key)
		}
		mode := os.FileMode(0o644)
		if r.Secret() {
			mode = 0o600
		}
		if err := writeFileAtomic(filepath.Join(o.HostDir(k.Input, r.Dir), r.Rel()), content, mode); err != nil {
			return fmt.Errorf("%s: %w", who, err)
		}
	}
	pod := o.Pod(k.Input, k.Image)
	doc, err := yaml.Marshal(pod.Pod)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(k.StaticPodDir, pod.File), doc, 0o644); err != nil {
		return fmt.Errorf("%s: %w", who, err)
	}
	k.Log.Info(who+": installed revision", "dir", o.HostDir(k.Input, controlplane.RevisionDir),
		"files", len(o.Resources()), "pod", filepath.Join(k.StaticPodDir, pod.File))
	return nil
}

// whoMakes says where an object the installer reads comes from.
func whoMakes(r controlplane.Resource) string {
	if r.NodeFile {
		return "the master's served config lays it down"
	}
	return "stage 13 creates it from /opt/openshift/manifests"
}

// InstallWhenReady retries Install every poll until it succeeds (the
// objects appear once stage 13 has created them) or ctx ends; report
// says each new reason it waits.
func (k *Installer) InstallWhenReady(ctx context.Context, poll time.Duration, report func(detail string)) bool {
	last := ""
	for {
		err := k.Install(ctx)
		if err == nil {
			return true
		}
		if msg := err.Error(); msg != last {
			last = msg
			report(msg + " (retrying)")
		}
		if !timing.Sleep(ctx, poll) {
			return false
		}
	}
}

// writeFileAtomic writes data to p through a dot-file beside it (the
// kubelet stand-in skips dot-files), making p's directory.
func writeFileAtomic(p string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(p, data, mode)
}

// APISource reads objects through the real API with a kubeconfig's
// identity, as the operator reads them.
type APISource struct{ c *kube.Client }

// NewAPISource returns the source for kubeconfig (client certificate and
// CA embedded, as the installer's kubeconfigs are); dial, when set, opens
// the connections (the node's resolver for api-int).
func NewAPISource(kubeconfig string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*APISource, error) {
	cfg, err := kube.LoadKubeconfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Dial = dial
	c, err := kube.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return &APISource{c: c}, nil
}

// Data implements ObjectSource.
func (s *APISource) Data(ctx context.Context, kind, namespace, name string) (map[string][]byte, error) {
	var obj struct {
		Data       map[string]string `json:"data"`
		BinaryData map[string]string `json:"binaryData"`
	}
	if err := s.c.Do(ctx, "GET", fmt.Sprintf("/api/v1/namespaces/%s/%s/%s", namespace, kind, name), nil, &obj); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for k, v := range obj.Data {
		if kind != "secrets" {
			out[k] = []byte(v)
			continue
		}
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("secret %s/%s key %s: %w", namespace, name, k, err)
		}
		out[k] = b
	}
	for k, v := range obj.BinaryData {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("configmap %s/%s key %s: %w", namespace, name, k, err)
		}
		out[k] = b
	}
	return out, nil
}

// Network reads the cluster's Network config (networks.config.openshift.io
// "cluster"), as the kube-apiserver's and controller manager's operators
// observe it for their pods' networks.
func (s *APISource) Network(ctx context.Context) (controlplane.Network, error) {
	var obj json.RawMessage
	if err := s.c.Do(ctx, "GET", "/apis/config.openshift.io/v1/networks/cluster", nil, &obj); err != nil {
		return controlplane.Network{}, err
	}
	return controlplane.ParseNetwork(obj)
}

// FeatureGates reads the cluster's FeatureGate (featuregates.config.openshift.io
// "cluster") and returns the gates its status lists for version, as the
// operators' feature-gate accessor does before their config observers hand
// --feature-gates to the operands (library-go
// pkg/operator/configobserver/featuregates/simple_featuregate_reader.go:
// no status entry for the version is an error, retried until there is one).
func (s *APISource) FeatureGates(ctx context.Context, version string) (controlplane.FeatureGates, error) {
	var obj json.RawMessage
	if err := s.c.Do(ctx, "GET", "/apis/config.openshift.io/v1/featuregates/cluster", nil, &obj); err != nil {
		return controlplane.FeatureGates{}, err
	}
	return controlplane.ParseFeatureGate(obj, version)
}

// FileObjects are objects the node already has as files, by "kind/name"
// then key: a rehearsal master's etcd-serving-ca and etcd-client, which
// its Ignition config laid down (upstream the operator copies them from
// openshift-etcd's objects; here the etcd render's are not in the API).
type FileObjects map[string]map[string]string

// Data implements ObjectSource: namespace is not looked at.
func (f FileObjects) Data(_ context.Context, kind, _, name string) (map[string][]byte, error) {
	keys, ok := f[kind+"/"+name]
	if !ok {
		return nil, errNotHere
	}
	out := map[string][]byte{}
	for k, p := range keys {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out[k] = b
	}
	return out, nil
}

// MasterEtcdFiles are a master's etcd objects as files: the CA bundle
// and client pair at these paths (wire.EtcdCABundle, ...).
func MasterEtcdFiles(caBundle, cert, key string) FileObjects {
	return FileObjects{
		"configmaps/etcd-serving-ca": {"ca-bundle.crt": caBundle},
		"secrets/etcd-client":        {"tls.crt": cert, "tls.key": key},
	}
}

// MasterClientFiles are a master's controller manager's and scheduler's
// client pairs as files (wire.OperandClientCertPath, ...): no operator
// issues them in a rehearsal lab, the lab's PKI does, in the master's
// served config.
func MasterClientFiles() FileObjects {
	out := FileObjects{}
	for _, o := range controlplane.MasterOperands() {
		if o.ClientSecret() == "" {
			continue
		}
		out["secrets/"+o.ClientSecret()] = map[string]string{
			"tls.crt": wire.OperandClientCertPath(string(o.Component)), "tls.key": wire.OperandClientKeyPath(string(o.Component))}
	}
	return out
}

var errNotHere = errors.New("not among the node's files")

// Sources reads an object from the first source that has it.
type Sources []ObjectSource

// Data implements ObjectSource.
func (ss Sources) Data(ctx context.Context, kind, namespace, name string) (map[string][]byte, error) {
	err := errNotHere
	for _, s := range ss {
		var d map[string][]byte
		if d, err = s.Data(ctx, kind, namespace, name); !errors.Is(err, errNotHere) {
			return d, err
		}
	}
	return nil, err
}
