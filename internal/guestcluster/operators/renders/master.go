package renders

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bootlab/bootlab/internal/controlplane"
)

// OperandObjects are the secrets and configmaps of o's namespace a
// master's installer copies (o's Resources that are not the master's own
// files), made from the bootstrap's files in the render's
// --asset-input-dir (/assets/tls), or written by the render (the
// kubeconfigs): for the kube-apiserver the same serving pairs, client CA
// and service-account keys, so what the bootstrap API signed stays valid
// on the masters; for the controller manager the same signer and
// service-account key. Upstream the operators make most of them from the
// signers their renders write; no operator runs in the rehearsal, so
// stages 08-10's renders write them already made, and stage 13 creates
// them. Secrets are 0600.
func OperandObjects(o controlplane.Operand, inputDir string) (map[string]File, error) {
	type object struct {
		kind string
		data map[string]string
	}
	objs := map[string]*object{}
	var order []string
	for _, r := range o.Resources() {
		if r.NodeFile {
			continue
		}
		b, ok := o.Generated(r)
		if !ok {
			var err error
			if b, err = os.ReadFile(filepath.Join(inputDir, r.Bootstrap)); err != nil {
				return nil, fmt.Errorf("the master %s's %s %s/%s needs %s from --asset-input-dir: %w", o.Component, r.Kind, o.Namespace, r.Name, r.Bootstrap, err)
			}
		}
		obj, ok := objs[r.Name]
		if !ok {
			obj = &object{kind: r.Kind, data: map[string]string{}}
			objs[r.Name] = obj
			order = append(order, r.Name)
		}
		if r.Secret() {
			obj.data[r.Key] = base64.StdEncoding.EncodeToString(b)
		} else {
			obj.data[r.Key] = string(b)
		}
	}
	out := map[string]File{}
	for _, name := range order {
		obj := objs[name]
		kind, file, mode := "ConfigMap", "manifests/configmap-"+name+".yaml", os.FileMode(0o644)
		if obj.kind == "secrets" {
			kind, file, mode = "Secret", "manifests/secret-"+name+".yaml", 0o600
		}
		if o.Component != controlplane.KubeAPIServer {
			// serviceaccount-ca is in two namespaces: one file each.
			file = strings.Replace(file, "manifests/", "manifests/"+o.Namespace+"-", 1)
		}
		m := map[string]any{"apiVersion": "v1", "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": o.Namespace}, "data": obj.data}
		if kind == "Secret" {
			m["type"] = "Opaque"
		}
		fo, err := yamlOut(m, mode)
		if err != nil {
			return nil, err
		}
		out[file] = fo
	}
	return out, nil
}
