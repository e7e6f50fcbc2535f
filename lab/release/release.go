package release

import (
	"fmt"
	"strconv"
	"strings"
)

// Etcd is a release's etcd: the version its payload ships and the
// module version bootlab builds, which differ when the module proxy does
// not serve the shipped one (or the checksum database has no entry).
type Etcd struct {
	// Shipped is api/version.Version on the release's branch of
	// openshift/etcd: the upstream release tarball downloaded is this one.
	Shipped string
	// Source says where Shipped was read.
	Source string
	// Module is the go.etcd.io/etcd/{server,etcdctl}/v3 version built: the
	// served version nearest to Shipped, the older on a tie.
	Module string
	// Why explains a Module that is not Shipped.
	Why string
}

// Release is one OpenShift minor's pins.
type Release struct {
	// OpenShift is the minor, "4.19".
	OpenShift string
	Etcd      Etcd
	// Kubernetes is the k8s.io/kubernetes module version (without the v)
	// of the release's Kubernetes minor that the module proxy serves: the
	// version both downloaded and built.
	Kubernetes string
	// KubernetesNote says what is special about building Kubernetes for
	// this release (lab/gobuild builds it), empty when nothing is.
	KubernetesNote string
	// Checksums are the pinned sha256 of the official artefacts, by
	// Artefact.Key: the table in checksums.txt (KubernetesArtefacts and
	// EtcdArtefact read it). A version missing here is built instead.
	Checksums map[string]string
}

const (
	notServed3518 = "etcdutl v3.5.18 has no checksum-database entry here; 3.5.16 is the nearest served pair"
	notServed3526 = "etcdctl v3.5.22-v3.5.26 are not served here; 3.5.21 is the nearest served pair not newer than 3.5.26"
	kubeNear129   = "endpointslice, kube-controller-manager, legacy-cloud-providers and the sample modules are built at v0.29.5: the proxy refuses v0.29.6"
	kubeNear131   = "endpointslice, kube-controller-manager and kube-scheduler are built at v0.31.13: the proxy refuses v0.31.14"
	kubeNear132   = "endpointslice is built at v0.32.12: the proxy refuses v0.32.13"
)

// All returns the pinned releases, oldest first: etcd read from
// openshift/etcd's release branches (the commit is the branch head read,
// November 2026), Kubernetes the served patch of each release's minor,
// and the checksums of their official artefacts from checksums.txt.
func All() []Release {
	table := versions()
	sums := pinnedChecksums()
	for i := range table {
		table[i].Checksums = sums
	}
	return table
}

// versions is the table without its checksums.
func versions() []Release {
	return []Release{
		{"4.16", Etcd{"3.5.14", "openshift/etcd openshift-4.16@e7911c0d1992 api/version/version.go", "3.5.14", ""}, "1.29.6", kubeNear129, nil},
		{"4.17", Etcd{"3.5.18", "openshift/etcd openshift-4.17@0d9e0a907c4a api/version/version.go", "3.5.16", notServed3518}, "1.30.14", "", nil},
		{"4.18", Etcd{"3.5.18", "openshift/etcd openshift-4.18@b5a4f8d079fb api/version/version.go", "3.5.16", notServed3518}, "1.31.14", kubeNear131, nil},
		{"4.19", Etcd{"3.5.26", "openshift/etcd openshift-4.19@3ebce536634c api/version/version.go", "3.5.21", notServed3526}, "1.32.13", kubeNear132, nil},
		{"4.20", Etcd{"3.5.26", "openshift/etcd openshift-4.20@05bca97760b1 api/version/version.go", "3.5.21", notServed3526}, "1.33.13", "", nil},
		{"4.21", Etcd{"3.6.5", "openshift/etcd openshift-4.21@806f690e1f14 api/version/version.go", "3.6.5", ""}, "1.34.4", "", nil},
		{"4.22", Etcd{"3.6.5", "openshift/etcd openshift-4.22@d8d67b8ce849 api/version/version.go", "3.6.5", ""}, "1.35.4", "", nil},
	}
}

// For returns the pins of an OpenShift version ("4.19", "4.19.10",
// "4.19.0-ec.3"); an unknown minor is an error naming the known ones.
func For(version string) (Release, error) {
	minor, err := Minor(version)
	if err != nil {
		return Release{}, err
	}
	table := All()
	for _, r := range table {
		if r.OpenShift == minor {
			return r, nil
		}
	}
	return Release{}, fmt.Errorf("OpenShift %s has no pinned etcd and Kubernetes versions: bootlab knows %s through %s (set openshift.version)",
		version, table[0].OpenShift, table[len(table)-1].OpenShift)
}

// Minor reads the major.minor of an OpenShift version.
func Minor(version string) (string, error) {
	parts := strings.SplitN(strings.TrimPrefix(strings.TrimSpace(version), "v"), ".", 3)
	if len(parts) >= 2 {
		minor := strings.SplitN(parts[1], "-", 2)[0]
		if _, err := strconv.Atoi(parts[0]); err == nil {
			if _, err := strconv.Atoi(minor); err == nil {
				return parts[0] + "." + minor, nil
			}
		}
	}
	return "", fmt.Errorf("OpenShift version %q: want major.minor, e.g. 4.19", version)
}
