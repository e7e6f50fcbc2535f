package controlplane

import (
	"fmt"
	"path"
)

// ReadFile reads a file by its path: os.ReadFile in a render, a node's
// file in `stage validate`.
type ReadFile func(name string) ([]byte, error)

// RenderInput is what the bootstrap pods depend on beyond OpenShift's
// defaults, read from a render's flags as the kube-apiserver and
// controller manager operators' renders read theirs: the cluster's
// networks from the Network config of --cluster-config-file (the
// installer's cluster-network-02-config.yml), the release from
// --payload-version, and the gates of the FeatureGate among
// --rendered-manifest-files (stage 05 resolved its status) for that
// release. A flag not given leaves what it decides at its default; a file
// a flag names that cannot be read or parsed is an error naming the flag.
func RenderInput(read ReadFile, flags map[string]string) (Input, error) {
	in := Input{OpenShift: flags["payload-version"]}
	if p := flags["cluster-config-file"]; p != "" {
		doc, err := read(p)
		if err != nil {
			return in, fmt.Errorf("--cluster-config-file: %w", err)
		}
		n, err := ParseNetwork(doc)
		if err != nil {
			return in, fmt.Errorf("--cluster-config-file %s: %w", p, err)
		}
		in.ServiceCIDR, in.ClusterCIDR = n.ServiceCIDR, n.ClusterCIDR
	}
	if dir := flags["rendered-manifest-files"]; dir != "" && in.OpenShift != "" {
		p := path.Join(dir, path.Base(FeatureGateManifest))
		doc, err := read(p)
		if err != nil {
			return in, fmt.Errorf("--rendered-manifest-files: the FeatureGate: %w", err)
		}
		if in.FeatureGates, err = ParseFeatureGate(doc, in.OpenShift); err != nil {
			return in, fmt.Errorf("--rendered-manifest-files: %s: %w", p, err)
		}
	}
	return in, nil
}
