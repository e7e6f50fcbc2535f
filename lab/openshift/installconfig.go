package openshift

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/userfile"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// InstallConfig is the part of the installer's install-config.yaml (v1) a
// platform-none UPI lab sets. Field names are the installer's.
type InstallConfig struct {
	APIVersion   string        `json:"apiVersion"`
	BaseDomain   string        `json:"baseDomain"`
	Metadata     Metadata      `json:"metadata"`
	Compute      []MachinePool `json:"compute"`
	ControlPlane MachinePool   `json:"controlPlane"`
	Networking   Networking    `json:"networking"`
	Platform     Platform      `json:"platform"`
	PullSecret   string        `json:"pullSecret"`
	SSHKey       string        `json:"sshKey"`
}

// Metadata names the cluster.
type Metadata struct {
	Name string `json:"name"`
}

// MachinePool is a compute or controlPlane pool.
type MachinePool struct {
	Name           string `json:"name"`
	Replicas       int    `json:"replicas"`
	Hyperthreading string `json:"hyperthreading"`
	Architecture   string `json:"architecture"`
}

// Networking is install-config networking.
type Networking struct {
	NetworkType    string           `json:"networkType"`
	ClusterNetwork []ClusterNetwork `json:"clusterNetwork"`
	ServiceNetwork []string         `json:"serviceNetwork"`
	MachineNetwork []MachineNetwork `json:"machineNetwork"`
}

// ClusterNetwork is one pod network block.
type ClusterNetwork struct {
	CIDR       string `json:"cidr"`
	HostPrefix int    `json:"hostPrefix"`
}

// MachineNetwork is one node network.
type MachineNetwork struct {
	CIDR string `json:"cidr"`
}

// Platform is platform: {none: {}}: UPI, the installer creates no machines.
type Platform struct {
	None struct{} `json:"none"`
}

// Defaults of install-config networking (the installer's and the docs'),
// used when the spec leaves openshift.clusterNetwork or serviceNetwork unset.
const (
	ClusterNetworkCIDR = spec.DefaultClusterNetworkCIDR
	ClusterHostPrefix  = spec.DefaultClusterHostPrefix
	ServiceNetworkCIDR = spec.DefaultServiceNetworkCIDR
	NetworkType        = "OVNKubernetes"
)

// NewInstallConfig builds the install-config of spec s: compute replicas 0
// (UPI boots its workers itself), controlPlane replicas = the masters,
// machineNetwork = the lab CIDR, clusterNetwork and serviceNetwork from
// openshift.clusterNetwork and openshift.serviceNetwork.
func NewInstallConfig(s *spec.Spec, pullSecret, sshKey string) (*InstallConfig, error) {
	p, err := netip.ParsePrefix(s.Network.CIDR)
	if err != nil {
		return nil, fmt.Errorf("network.cidr %q: %w", s.Network.CIDR, err)
	}
	masters := len(s.NodesByRole(spec.RoleMaster))
	if masters == 0 {
		return nil, errors.New("nodes: an OpenShift lab needs at least one master")
	}
	clusterNets := []ClusterNetwork{{CIDR: ClusterNetworkCIDR, HostPrefix: ClusterHostPrefix}}
	if len(s.OpenShift.ClusterNetwork) > 0 {
		clusterNets = clusterNets[:0]
		for _, cn := range s.OpenShift.ClusterNetwork {
			clusterNets = append(clusterNets, ClusterNetwork{CIDR: cn.CIDR, HostPrefix: cn.HostPrefix})
		}
	}
	serviceNets := []string{ServiceNetworkCIDR}
	if len(s.OpenShift.ServiceNetwork) > 0 {
		serviceNets = append([]string(nil), s.OpenShift.ServiceNetwork...)
	}
	return &InstallConfig{
		APIVersion: "v1",
		BaseDomain: s.Cluster.BaseDomain,
		Metadata:   Metadata{Name: s.Cluster.Name},
		Compute:    []MachinePool{{Name: "worker", Replicas: 0, Hyperthreading: "Enabled", Architecture: "amd64"}},
		ControlPlane: MachinePool{
			Name: "master", Replicas: masters, Hyperthreading: "Enabled", Architecture: "amd64",
		},
		Networking: Networking{
			NetworkType:    NetworkType,
			ClusterNetwork: clusterNets,
			ServiceNetwork: serviceNets,
			MachineNetwork: []MachineNetwork{{CIDR: p.Masked().String()}},
		},
		PullSecret: pullSecret,
		SSHKey:     sshKey,
	}, nil
}

// Marshal renders the install-config as YAML.
func (c *InstallConfig) Marshal() ([]byte, error) { return yaml.Marshal(c) }

// InstallSSHKeys is install-config sshKey: the key of
// openshift.sshPublicKeyFile, when set, and always the lab key, one per line
// (the installer accepts several). bootlab's own SSH (lab ssh, lab wait,
// bootlab stage, gather --key) logs in with the lab key, so it must be
// authorized on the nodes whatever key the user adds.
func InstallSSHKeys(s *spec.Spec) (string, error) {
	labKey, err := LoadSSHPublicKey(labdir.SSHKey(s) + ".pub")
	if err != nil {
		return "", err
	}
	if s.OpenShift.SSHPublicKeyFile == "" {
		return labKey, nil
	}
	userKey, err := LoadSSHPublicKey(s.OpenShift.SSHPublicKeyFile)
	if err != nil {
		return "", err
	}
	if keyBlob(userKey) == keyBlob(labKey) {
		return userKey, nil
	}
	return userKey + "\n" + labKey, nil
}

// keyBlob is the type and base64 of an authorized key, without its comment.
func keyBlob(key string) string {
	f := strings.Fields(key)
	if len(f) < 2 {
		return key
	}
	return f[0] + " " + f[1]
}

// LoadSSHPublicKey reads and checks an OpenSSH public key file.
func LoadSSHPublicKey(path string) (string, error) {
	data, err := userfile.Read(path, userfile.MaxTextBytes)
	if err != nil {
		return "", fmt.Errorf("ssh public key %s (openshift.sshPublicKeyFile, default the lab key's .pub): %w", path, err)
	}
	key := strings.TrimSpace(string(data))
	fields := strings.Fields(key)
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "ssh-") && !strings.HasPrefix(fields[0], "ecdsa-") {
		return "", fmt.Errorf("ssh public key %s is not an OpenSSH public key (\"ssh-ed25519 AAAA... comment\"): point openshift.sshPublicKeyFile at a .pub file", path)
	}
	return key, nil
}
