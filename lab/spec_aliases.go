// The facade re-exports the spec model (lab/spec) so that callers of lab
// keep one import while they move to lab/spec. Keep it in step with
// lab/spec: TestAliasesCoverSpec fails on an export missing here.

package lab

import "github.com/bootlab/bootlab/lab/spec"

type (
	Profile         = spec.Profile
	Role            = spec.Role
	NetworkMode     = spec.NetworkMode
	Accelerator     = spec.Accelerator
	Spec            = spec.Spec
	Cluster         = spec.Cluster
	Libvirt         = spec.Libvirt
	Network         = spec.Network
	Storage         = spec.Storage
	Image           = spec.Image
	Topology        = spec.Topology
	Node            = spec.Node
	OpenShift       = spec.OpenShift
	StageSettings   = spec.StageSettings
	ClusterNetwork  = spec.ClusterNetwork
	Mirrors         = spec.Mirrors
	URIKind         = spec.URIKind
	FieldError      = spec.FieldError
	ValidationError = spec.ValidationError
)

const (
	PullSecretHelp                 = spec.PullSecretHelp
	RehearsalCmdlineFlag           = spec.RehearsalCmdlineFlag
	RehearsalBootstrapMemoryMiB    = spec.RehearsalBootstrapMemoryMiB
	RehearsalMasterMemoryMiB       = spec.RehearsalMasterMemoryMiB
	RehearsalBootstrapMinMemoryMiB = spec.RehearsalBootstrapMinMemoryMiB
	HAProxyStatsPort               = spec.HAProxyStatsPort
	MaxNodes                       = spec.MaxNodes
	DefaultOpenShiftVersion        = spec.DefaultOpenShiftVersion
	APIVersion                     = spec.APIVersion
	Kind                           = spec.Kind
	ProfileOpenShift               = spec.ProfileOpenShift
	ProfileProbe                   = spec.ProfileProbe
	RoleBootstrap                  = spec.RoleBootstrap
	RoleMaster                     = spec.RoleMaster
	RoleWorker                     = spec.RoleWorker
	NetworkNAT                     = spec.NetworkNAT
	NetworkIsolated                = spec.NetworkIsolated
	AccelAuto                      = spec.AccelAuto
	AccelKVM                       = spec.AccelKVM
	AccelTCG                       = spec.AccelTCG
	DefaultClusterNetworkCIDR      = spec.DefaultClusterNetworkCIDR
	DefaultClusterHostPrefix       = spec.DefaultClusterHostPrefix
	DefaultServiceNetworkCIDR      = spec.DefaultServiceNetworkCIDR
	URILocalSystem                 = spec.URILocalSystem
	URILocalSession                = spec.URILocalSession
	URIRemoteSSH                   = spec.URIRemoteSSH
	URIRemoteLibvirtOnly           = spec.URIRemoteLibvirtOnly
	URITest                        = spec.URITest
	URIInvalid                     = spec.URIInvalid
)

var (
	URISchemes        = spec.URISchemes
	CheckPullSecret   = spec.CheckPullSecret
	CheckSSHPublicKey = spec.CheckSSHPublicKey
	DefaultHome       = spec.DefaultHome
	Load              = spec.Load
	Parse             = spec.Parse
	MinMemoryMiB      = spec.MinMemoryMiB
	DefaultSize       = spec.DefaultSize
	DeriveMAC         = spec.DeriveMAC
	NthHost           = spec.NthHost
	URIDriver         = spec.URIDriver
	URITransport      = spec.URITransport
	ClassifyURI       = spec.ClassifyURI
	SystemDirProblem  = spec.SystemDirProblem
	CheckYAML         = spec.CheckYAML
)
