package controlplane

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// NetworkManifest is where the installer writes the cluster's Network
// config among bootkube's manifests: the renders of stages 08 and 09 read
// it as --cluster-config-file, and stage 13 creates it through the API.
const NetworkManifest = "manifests/cluster-network-02-config.yml"

// Network is the cluster's service and pod networks as the
// config.openshift.io/v1 Network "cluster" has them: what the
// kube-apiserver's and the controller manager's operators give their
// pods' --service-cluster-ip-range and --cluster-cidr. Upstream the
// operators read the Network's status, which the network operator fills
// from its spec; no network operator runs in a rehearsal lab, so the spec
// is read.
type Network struct {
	// ServiceCIDR is spec.serviceNetwork and ClusterCIDR the CIDRs of
	// spec.clusterNetwork, each comma-separated: empty where the Network
	// lists none (Input's and MasterInput's defaults then apply).
	ServiceCIDR, ClusterCIDR string
}

// ParseNetwork reads a Network config, YAML or JSON: the installer's
// manifest or the API's object.
func ParseNetwork(doc []byte) (Network, error) {
	var obj struct {
		Kind string `json:"kind"`
		Spec struct {
			ClusterNetwork []struct {
				CIDR string `json:"cidr"`
			} `json:"clusterNetwork"`
			ServiceNetwork []string `json:"serviceNetwork"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(doc, &obj); err != nil {
		return Network{}, fmt.Errorf("the Network config does not parse: %v", err)
	}
	if obj.Kind != "Network" {
		return Network{}, fmt.Errorf("is a %q, want the config.openshift.io/v1 Network", obj.Kind)
	}
	var cluster []string
	for _, c := range obj.Spec.ClusterNetwork {
		cluster = append(cluster, c.CIDR)
	}
	return Network{ServiceCIDR: strings.Join(obj.Spec.ServiceNetwork, ","), ClusterCIDR: strings.Join(cluster, ",")}, nil
}
