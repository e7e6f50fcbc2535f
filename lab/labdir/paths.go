package labdir

import (
	"path"
	"path/filepath"

	"github.com/bootlab/bootlab/lab/spec"
)

// The entries bootlab makes in a lab directory.
const (
	stateFile       = "state.json"
	verifyFile      = "verify.json"
	diagnosesFile   = "diagnoses.json"
	lockFile        = "lock"
	consoleDir      = "console"
	ignitionDir     = "ignition"
	haproxyDir      = "haproxy"
	sshDir          = "ssh"
	pkiDir          = "pki"
	assetsDir       = "assets"
	installConfig   = "install-config.yaml"
	baseImageMarker = "base-image.done"
	stagesDir       = "stages"
	checkpointsDir  = "checkpoints"
	kubeconfigFile  = "kubeconfig"
	gatherDir       = "gather"
	faultsFile      = "faults.json"
)

// Entries are the names bootlab's lab verbs, preparers and stage commands
// make in a lab directory, which `lab down` removes (then the lock): all of
// it belongs to the lab's identity, and a later lab of the same name must
// not inherit any of it (the stage logs included). Anything else there
// stays: caches, a file the user put there. install-config.yaml is the
// openshift preparer's kept copy (it holds the pull secret).
func Entries() []string {
	return []string{consoleDir, ignitionDir, haproxyDir, sshDir, pkiDir, assetsDir, installConfig, baseImageMarker,
		stateFile, verifyFile, checkpointsDir, stagesDir, kubeconfigFile, gatherDir, faultsFile, diagnosesFile}
}

// Faults is the trainer's record of the faults `lab break` set (0600): the
// learner's views (status, verify, the dashboard) never read it.
func Faults(s *spec.Spec) string { return filepath.Join(s.LabDir, faultsFile) }

// Gather is where `lab gather` writes a probe or rehearsal lab's log
// bundles when no --dir is given: the lab's own, so `lab down` removes
// them with it.
func Gather(s *spec.Spec) string { return filepath.Join(s.LabDir, gatherDir) }

// CheckpointEntries are the lab files a checkpoint keeps beside its
// snapshots, restored with them: the state, the last verify and the stage
// records.
func CheckpointEntries() []string { return []string{stateFile, verifyFile, stagesDir} }

// StatePath is the state file of the lab whose directory is labDir.
func StatePath(labDir string) string { return filepath.Join(labDir, stateFile) }

// VerifyRecordPath is the last verify result of the lab in labDir.
func VerifyRecordPath(labDir string) string { return filepath.Join(labDir, verifyFile) }

// DiagnosesPath is where `lab diagnose` of the running lab keeps what it
// found (diagnoses.go), for the trainer's class status.
func DiagnosesPath(labDir string) string { return filepath.Join(labDir, diagnosesFile) }

// Kubeconfig is the admin kubeconfig `lab kubeconfig` writes for the
// learner's kubectl (0600).
func Kubeconfig(s *spec.Spec) string { return filepath.Join(s.LabDir, kubeconfigFile) }

// LockPath is the lab's lock file.
func LockPath(labDir string) string { return filepath.Join(labDir, lockFile) }

// Ignition is where node n's Ignition (as passed through fw_cfg) lives.
func Ignition(s *spec.Spec, n spec.Node) string {
	return filepath.Join(s.LabDir, ignitionDir, n.Name+".ign")
}

// SSHKey is the lab's private key (ed25519, 0600); SSHKey(s)+".pub" is its
// public half.
func SSHKey(s *spec.Spec) string { return filepath.Join(s.LabDir, sshDir, "id_ed25519") }

// KnownHosts records the host keys of the lab's nodes (trusted on first use
// by every SSH client bootlab runs: internal/sshc, `lab ssh`).
func KnownHosts(s *spec.Spec) string { return filepath.Join(s.LabDir, sshDir, "known_hosts") }

// RehearsalHostKey is the SSH host key of a rehearsal lab's bootstrap node
// (ed25519, 0600). It is made on the host once per lab and handed to the
// node in its Ignition, so the node presents the same host key after every
// reboot and known_hosts stays right.
func RehearsalHostKey(s *spec.Spec) string {
	return filepath.Join(s.LabDir, sshDir, "bootstrap_host_ed25519_key")
}

// PKI is the lab CA and serving certificates of a probe lab (0600 keys).
func PKI(s *spec.Spec) string { return filepath.Join(s.LabDir, pkiDir) }

// Assets is where openshift-install runs (install-config, manifests,
// Ignition, auth).
func Assets(s *spec.Spec) string { return filepath.Join(s.LabDir, assetsDir) }

// InstallConfigCopy is the install-config bootlab rendered, kept because
// openshift-install consumes the one in Assets.
func InstallConfigCopy(s *spec.Spec) string { return filepath.Join(s.LabDir, installConfig) }

// BaseImageMarker records which base image was imported into the pool.
func BaseImageMarker(s *spec.Spec) string { return filepath.Join(s.LabDir, baseImageMarker) }

// Stages keeps `bootlab stage` records and output logs.
func Stages(s *spec.Spec) string { return filepath.Join(s.LabDir, stagesDir) }

// Checkpoints holds one directory per checkpoint.
func Checkpoints(s *spec.Spec) string { return filepath.Join(s.LabDir, checkpointsDir) }

// Checkpoint is checkpoint name's directory.
func Checkpoint(s *spec.Spec, name string) string { return filepath.Join(Checkpoints(s), name) }

// Console is the lab directory's copy of the console logs (a checkpoint
// restores them there).
func Console(s *spec.Spec) string { return filepath.Join(s.LabDir, consoleDir) }

// HostDir is the lab's directory on the hypervisor's machine
// (libvirt.hostDir): the lab directory itself when the hypervisor is local.
func HostDir(s *spec.Spec) string {
	switch {
	case s.Libvirt.HostDir != "":
		return s.Libvirt.HostDir
	case s.Remote():
		return path.Join("/var/lib/bootlab/labs", s.Name)
	}
	return s.LabDir
}

// ConsoleLog is node n's serial console log, on the hypervisor's machine
// (virtlogd writes it there).
func ConsoleLog(s *spec.Spec, n spec.Node) string {
	return filepath.Join(HostDir(s), consoleDir, n.Name+".log")
}

// HostEntries are what bootlab makes in the lab's directory on a remote
// hypervisor's machine (HostDir): the console logs and the load balancer's
// files. `lab down` removes them, then the directory when it is empty.
func HostEntries(s *spec.Spec) []string {
	return []string{filepath.Dir(ConsoleLog(s, spec.Node{Name: "x"})), HAProxyDir(s)}
}

// IsConsoleLog says whether path is a console log as ConsoleLog names them
// (in a "console" directory, on whichever machine).
func IsConsoleLog(path string) bool { return filepath.Base(filepath.Dir(path)) == consoleDir }

// HAProxyDir holds the lab's load balancer files, on the hypervisor's
// machine, where the load balancer runs.
func HAProxyDir(s *spec.Spec) string { return filepath.Join(HostDir(s), haproxyDir) }

// HAProxyConfig, HAProxyPID and HAProxySocket are the load balancer's
// config, pid file and admin socket.
func HAProxyConfig(s *spec.Spec) string { return filepath.Join(HAProxyDir(s), "haproxy.cfg") }
func HAProxyPID(s *spec.Spec) string    { return filepath.Join(HAProxyDir(s), "haproxy.pid") }
func HAProxySocket(s *spec.Spec) string { return filepath.Join(HAProxyDir(s), "admin.sock") }
