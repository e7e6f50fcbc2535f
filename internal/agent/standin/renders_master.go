package standin

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bootlab/bootlab/internal/controlplane"
)

// kasMasterObjects are the openshift-kube-apiserver secrets and configmaps
// a master's kube-apiserver installer copies (controlplane's
// MasterResources that are not the master's own etcd files), made from
// the bootstrap's files in the render's --asset-input-dir (/assets/tls):
// the same serving pairs, client CA and service-account keys, so what the
// bootstrap API signed stays valid on the masters. Upstream the operator
// makes most of them from the signers its render writes; no operator runs
// in the rehearsal, so stage 08's render writes them already made, and
// stage 13 creates them. Secrets are 0600.
func kasMasterObjects(inputDir string) (map[string]fileOut, error) {
	type object struct {
		kind string
		data map[string]string
	}
	objs := map[string]*object{}
	var order []string
	for _, r := range controlplane.MasterResources() {
		if r.NodeFile {
			continue
		}
		b, err := os.ReadFile(filepath.Join(inputDir, r.Bootstrap))
		if err != nil {
			return nil, fmt.Errorf("the master kube-apiserver's %s %s/%s needs %s from --asset-input-dir: %w", r.Kind, controlplane.MasterNamespace, r.Name, r.Bootstrap, err)
		}
		o, ok := objs[r.Name]
		if !ok {
			o = &object{kind: r.Kind, data: map[string]string{}}
			objs[r.Name] = o
			order = append(order, r.Name)
		}
		if r.Secret() {
			o.data[r.Key] = base64.StdEncoding.EncodeToString(b)
		} else {
			o.data[r.Key] = string(b)
		}
	}
	out := map[string]fileOut{}
	for _, name := range order {
		o := objs[name]
		kind, file, mode := "ConfigMap", "manifests/configmap-"+name+".yaml", os.FileMode(0o644)
		if o.kind == "secrets" {
			kind, file, mode = "Secret", "manifests/secret-"+name+".yaml", 0o600
		}
		obj := map[string]any{"apiVersion": "v1", "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": controlplane.MasterNamespace}, "data": o.data}
		if kind == "Secret" {
			obj["type"] = "Opaque"
		}
		fo, err := yamlOut(obj, mode)
		if err != nil {
			return nil, err
		}
		out[file] = fo
	}
	return out, nil
}
