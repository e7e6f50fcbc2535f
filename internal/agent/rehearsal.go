package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/coreos/ignition/v2/config/v3_2/types"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/bootlab/bootlab/internal/agent/endpoints"
	"github.com/bootlab/bootlab/internal/agent/sshd"
	"github.com/bootlab/bootlab/internal/guestcluster/approvecsr"
	"github.com/bootlab/bootlab/internal/guestcluster/journal"
	"github.com/bootlab/bootlab/internal/guestcluster/kubelet"
	"github.com/bootlab/bootlab/internal/guestcluster/operators/etcd"
	"github.com/bootlab/bootlab/internal/guestcluster/reportprogress"
	"github.com/bootlab/bootlab/internal/guestcluster/shims"
	"github.com/bootlab/bootlab/internal/guestcluster/units"
	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/rhcos"
	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/internal/wire"
)

// A rehearsal bootstrap (probe lab with openshift.manualBootstrap) starts
// at boot only what a real bootstrap starts at boot: sshd, the kubelet,
// approve-csr.service and progress.service. The Ignition
// files are laid down as Ignition would, the core user gets its key, and
// the stages do the rest over SSH.

const chkSSH = "serve ssh :22"

// rehearse prepares the node and starts its SSH server.
func (a *Agent) rehearse(self wire.NodeExpect, cfg types.Config) {
	// The kernel starts /init with no PATH; sudo and the shells get theirs.
	_ = os.Setenv("PATH", rhcos.DefaultPath)
	n, err := rhcos.WriteIgnitionFilesExcept(cfg, a.disk.keptFile)
	if err != nil {
		a.rep.set(chkSSH, failed, "write Ignition files: %v", err)
		return
	}
	a.log.Info("wrote the Ignition files", "files", n)
	keys := authorizedKeys(cfg, "core")
	if err := setupCore(keys); err != nil {
		a.rep.set(chkSSH, failed, "set up user core: %v", err)
		return
	}
	if err := setupSudo(); err != nil {
		a.rep.set(chkSSH, failed, "sudo: %v", err)
		return
	}
	if err := os.MkdirAll("/dev/pts", 0o755); err == nil {
		if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "gid=5,mode=620,ptmxmode=666"); err != nil && !errors.Is(err, unix.EBUSY) {
			a.log.Warn("mount /dev/pts: interactive logins will have no terminal", "err", err)
		}
	}
	if _, err := os.Stat("/bin/bash"); err != nil {
		a.rep.set(chkSSH, failed, "no bash in this initrd: the rehearsal bootstrap boots image.rehearsalInitrd (bootlab lab probe-image build --rehearsal)")
		return
	}
	hostKey, ok, err := ignition.FileContents(cfg, wire.SSHHostKeyPath)
	if err != nil || !ok {
		a.rep.set(chkSSH, failed, "no host key at %s in the Ignition config: %v", wire.SSHHostKeyPath, err)
		return
	}
	srv, err := sshd.New(hostKey, keys, a.log)
	if err != nil {
		a.rep.set(chkSSH, failed, "%v", err)
		return
	}
	ln, err := net.Listen("tcp", ":22")
	if err != nil {
		a.rep.set(chkSSH, failed, "listen: %v", err)
		return
	}
	go func() { _ = srv.Serve(ln) }()
	a.writeResolvConf()
	// The volume is mounted before the control-plane pods start: the
	// kubelet stand-in holds a pod whose program it brings until then.
	vol := a.mountKubeVolumeAsync()
	go a.reportNoKubeVolume(vol)
	a.releaseImageJournal()
	kl := a.newKubelet(map[string]kubelet.Service{
		"machine-config-server": func(_ corev1.Pod, _ corev1.Container, log io.Writer) (func(), error) { return a.startMCS(self, log) },
	}).WithPending(vol.pending).WithHostIP(self.IP)
	a.kubelet.Store(kl)
	go kl.Run(context.Background())
	go a.reportRealAPI(context.Background(), kl)
	a.startUnits()
	go a.reportBootstrapEtcd(context.Background())
	a.rep.set(chkSSH, passed, "listening on :22 (users root and core, the lab's key; core runs root commands with sudo -n)")
}

// startUnits starts the services enabled on a real bootstrap that the
// agent runs itself, as systemd units a learner may stop, start and read
// (systemctl and journalctl on the node): approve-csr.service approves
// the masters' CSRs whenever an API answers, until .bootkube.done;
// progress.service, after .bootkube.done, creates kube-system/bootstrap
// through api-int, which the etcd operator's teardown waits for. Their
// descriptions are the installer's unit files' (data/data/bootstrap/
// systemd/common/units/approve-csr.service, progress.service).
func (a *Agent) startUnits() {
	csrLog := journal.TeePlain(a.log, journal.NewWriter(journal.Dir, "approve-csr.service", "approve-csr.sh", os.Getpid()))
	progressLog := journal.TeePlain(a.log, journal.NewWriter(journal.Dir, "progress.service", "report-progress.sh", os.Getpid()))
	m := units.New(journal.Dir,
		units.Unit{Name: "approve-csr.service", Description: "Approve CSRs during bootstrap phase", Run: func(ctx context.Context) error {
			approvecsr.Service{Assets: wire.AssetDir, Interval: approvecsr.Interval, Log: csrLog}.Run(ctx)
			return nil
		}},
		units.Unit{Name: "progress.service", Description: "Report the completion of the cluster bootstrap process", Run: func(ctx context.Context) error {
			version := ""
			if rel, err := wire.ReadRehearsalRelease(wire.ReleaseMetadataPath); err == nil {
				version = rel.Version
			}
			return reportprogress.New(wire.AssetDir, version, a.newDialer().DialContext, progressLog).Run(ctx)
		}})
	for _, n := range m.Names() {
		_ = m.Start(n)
	}
	go func() {
		if err := m.Serve(context.Background(), units.SocketPath); err != nil {
			a.log.Error("the units' socket: systemctl start/stop/status will not answer", "err", err)
		}
	}()
}

// mountKubeVolume makes the release's Kubernetes runnable by name when
// the node has the rehearsal lab's Kubernetes volume, and says whether it
// is.
func (a *Agent) mountKubeVolume() bool {
	start := time.Now()
	ok, err := mountKubeVolume(context.Background(), "/sys/block")
	switch {
	case err != nil:
		a.log.Error("the Kubernetes volume: kube-apiserver and kubectl will be missing", "err", err)
		return false
	case ok:
		a.log.Info("mounted the Kubernetes volume read-only", "at", wire.KubeVolumeMount, "programs", binDir, "took", time.Since(start).Round(time.Millisecond))
	}
	return ok
}

// writeResolvConf points the node's resolver at the DHCP server's DNS
// (the lab's dnsmasq), as NetworkManager does on RHCOS.
func (a *Agent) writeResolvConf() {
	var b strings.Builder
	if a.lease != nil {
		if a.lease.Domain != "" {
			fmt.Fprintf(&b, "search %s\n", a.lease.Domain)
		}
		for _, d := range a.lease.DNS {
			fmt.Fprintf(&b, "nameserver %s\n", d)
		}
	}
	_ = os.WriteFile("/etc/resolv.conf", []byte(b.String()), 0o644)
	_ = os.WriteFile("/etc/hosts", []byte("127.0.0.1 localhost localhost.localdomain\n::1 localhost localhost.localdomain\n"), 0o644)
}

// newKubelet is the node's kubelet stand-in, playing services itself, its
// log also kubelet.service's journal (the unit runs /usr/bin/kubelet:
// installer data/data/bootstrap/files/usr/local/bin/kubelet.sh.template)
// and the containers it runs crio.service's.
func (a *Agent) newKubelet(services map[string]kubelet.Service) *kubelet.Kubelet {
	log := journal.Tee(a.log, journal.NewWriter(journal.Dir, "kubelet.service", "kubelet", os.Getpid()))
	return kubelet.New(log, kubelet.StaticPodDir, services).
		WithCRIOJournal(journal.NewWriter(journal.Dir, "crio.service", "crio", os.Getpid()))
}

// releaseImageJournal writes release-image.service's journal as the unit
// begins it (installer data/data/bootstrap/files/usr/local/bin/
// release-image-download.sh.template: "Pulling $RELEASE_IMAGE..."): a
// rehearsal bootstrap pulls nothing, its release's metadata is on it.
func (a *Agent) releaseImageJournal() {
	j := journal.NewWriter(journal.Dir, "release-image.service", "release-image-download.sh", os.Getpid())
	rel, err := wire.ReadRehearsalRelease(wire.ReleaseMetadataPath)
	if err != nil {
		j.Print(journal.PriErr, "release-image.service (bootlab rehearsal stand-in): no release metadata: "+err.Error())
		return
	}
	j.Print(journal.PriInfo, "Pulling "+rel.Image+"...")
	j.Print(journal.PriInfo, "release-image.service (bootlab rehearsal stand-in): nothing to pull: the rehearsal bootstrap has the release's metadata in "+wire.ReleaseMetadataPath+
		" (OpenShift "+rel.Version+"), and the podman and oc stand-ins answer from it")
}

// startMCS starts the bootstrap Machine Config Server, as the kubelet
// starts the machine-config-server container of the pod stage 12 lands:
// TLS with /etc/ssl/mcs (which stage 12 copies), serving the master
// config under /etc/mcs/bootstrap; its log is also the container's.
func (a *Agent) startMCS(self wire.NodeExpect, log io.Writer) (func(), error) {
	cert, err := tls.LoadX509KeyPair("/etc/ssl/mcs/tls.crt", "/etc/ssl/mcs/tls.key")
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	master, err := os.ReadFile(wire.MasterConfigPath)
	if err != nil {
		return nil, fmt.Errorf("the master pool's config: %w", err)
	}
	mcsLog := slog.New(slog.NewMultiHandler(a.log.Handler(), slog.NewTextHandler(log, nil)))
	mcs := &endpoints.MCS{Mode: endpoints.MCSBootstrap, Configs: map[string][]byte{"master": master}, Log: mcsLog, Node: self.Name}
	mcs.OnServe = func(pool, remote string, code int) {
		served := mcs.Served()["master"]
		a.rep.set(chkMCS, passed, "bootstrap MCS started by stage 12; served /config/master to %d: %s", len(served), strings.Join(served, " "))
	}
	stop, err := a.serveTLSOn(ignition.MCSPort, cert, mcs)
	if err != nil {
		return nil, err
	}
	a.rep.set(chkMCS, passed, "bootstrap MCS started by stage 12 (its pod landed in /etc/kubernetes/manifests)")
	return func() {
		stop()
		a.rep.set(chkMCS, failed, "bootstrap MCS stopped: its pod's manifest was removed")
	}, nil
}

// serveTLSOn serves h with TLS on port until the returned stop is called.
func (a *Agent) serveTLSOn(port int, cert tls.Certificate, h http.Handler) (func(), error) {
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(a.log.Handler(), slog.LevelDebug)}
	tl := tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
	go func() { _ = srv.Serve(tl) }()
	return func() { _ = srv.Close() }, nil
}

// authorizedKeys returns the SSH keys Ignition gives user.
func authorizedKeys(cfg types.Config, user string) []string {
	var out []string
	for _, u := range cfg.Passwd.Users {
		if u.Name == user {
			for _, k := range u.SSHAuthorizedKeys {
				out = append(out, string(k))
			}
		}
	}
	return out
}

// setupCore gives core its home and keys where RHCOS's Ignition puts them.
func setupCore(keys []string) error {
	core := rhcos.Core()
	dir := filepath.Join(core.Home, ".ssh", "authorized_keys.d")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ignition"), []byte(strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	for _, p := range []string{core.Home, filepath.Join(core.Home, ".ssh"), dir, filepath.Join(dir, "ignition")} {
		if err := os.Chown(p, int(core.UID), int(core.GID)); err != nil {
			return err
		}
	}
	return os.Chmod(core.Home, 0o700)
}

// setupSudo links shims.SudoPath to the agent and makes it set-user-ID root.
func setupSudo() error {
	self, err := os.Executable()
	if err != nil {
		self = "/init"
	}
	_ = os.Remove(shims.SudoPath)
	if err := os.Link(self, shims.SudoPath); err != nil {
		return fmt.Errorf("link %s to %s: %w", shims.SudoPath, self, err)
	}
	if err := os.Chmod(shims.SudoPath, 0o4755|fs.ModeSetuid); err != nil {
		return err
	}
	for _, name := range shims.Names() {
		p := filepath.Join(filepath.Dir(shims.SudoPath), name)
		_ = os.Remove(p)
		if err := os.Symlink(self, p); err != nil {
			return fmt.Errorf("link %s: %w", p, err)
		}
	}
	return nil
}

// reportBootstrapEtcd puts the etcd member list, as the bootstrap's own
// member answers it, in the bootstrap's report once stage 07 has run (its
// marker), every etcdEvery: the dashboard's etcd card shows the one member
// before the masters have their config and report theirs.
func (a *Agent) reportBootstrapEtcd(ctx context.Context) {
	marker := filepath.Join(wire.AssetDir, "etcd-bootstrap.done")
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if !timing.Sleep(ctx, 5*time.Second) {
			return
		}
	}
	ctl := etcd.BootstrapEtcdctl(wire.AssetDir)
	a.rep.watchEtcd(ctx, etcdEvery, func(ctx context.Context) wire.EtcdMembers {
		return etcd.ReadMembers(ctx, ctl)
	})
}
