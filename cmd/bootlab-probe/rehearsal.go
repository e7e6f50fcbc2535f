package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
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

	"github.com/bootlab/bootlab/lab/ignition"
	"github.com/bootlab/bootlab/lab/probe"
)

// A rehearsal bootstrap (probe lab with openshift.manualBootstrap) starts
// at boot only what a real bootstrap starts at boot: sshd. The Ignition
// files are laid down as Ignition would, the core user gets its key, and
// the stages do the rest over SSH.

const chkSSH = "serve ssh :22"

// sudoPath is where the sudo stand-in lives: a set-user-ID link to the
// agent, which acts as sudo when started under that name (sudoMain).
const sudoPath = "/usr/bin/sudo"

// rehearse prepares the node and starts its SSH server.
func (a *agent) rehearse(self probe.NodeExpect, cfg types.Config) {
	// The kernel starts /init with no PATH; sudo and the shells get theirs.
	_ = os.Setenv("PATH", defaultPath)
	n, err := writeIgnitionFiles(cfg)
	if err != nil {
		a.rep.set(chkSSH, false, false, "write Ignition files: %v", err)
		return
	}
	a.log.Info("wrote the Ignition files", "files", n)
	keys := authorizedKeys(cfg, "core")
	if err := setupCore(keys); err != nil {
		a.rep.set(chkSSH, false, false, "set up user core: %v", err)
		return
	}
	if err := setupSudo(); err != nil {
		a.rep.set(chkSSH, false, false, "sudo: %v", err)
		return
	}
	if err := os.MkdirAll("/dev/pts", 0o755); err == nil {
		if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "gid=5,mode=620,ptmxmode=666"); err != nil && !errors.Is(err, unix.EBUSY) {
			a.log.Warn("mount /dev/pts: interactive logins will have no terminal", "err", err)
		}
	}
	if _, err := os.Stat("/bin/bash"); err != nil {
		a.rep.set(chkSSH, false, false, "no bash in this initrd: the rehearsal bootstrap boots image.rehearsalInitrd (bootlab lab probe-image build --rehearsal)")
		return
	}
	hostKey, ok, err := ignition.FileContents(cfg, probe.SSHHostKeyPath)
	if err != nil || !ok {
		a.rep.set(chkSSH, false, false, "no host key at %s in the Ignition config: %v", probe.SSHHostKeyPath, err)
		return
	}
	srv, err := newSSHServer(hostKey, keys, a.log)
	if err != nil {
		a.rep.set(chkSSH, false, false, "%v", err)
		return
	}
	ln, err := net.Listen("tcp", ":22")
	if err != nil {
		a.rep.set(chkSSH, false, false, "listen: %v", err)
		return
	}
	go func() { _ = srv.serve(ln) }()
	a.writeResolvConf()
	kl := &kubelet{log: a.log, dir: staticPodDir, pods: map[string]*runningPod{},
		services: map[string]func(corev1.Pod, corev1.Container) (func(), error){
			"machine-config-server": func(corev1.Pod, corev1.Container) (func(), error) { return a.startMCS(self) },
			"kube-apiserver":        func(corev1.Pod, corev1.Container) (func(), error) { return a.startAPI(self) },
		}}
	go kl.run(context.Background())
	a.rep.set(chkSSH, true, false, "listening on :22 (users root and core, the lab's key; core runs root commands with sudo -n)")
}

// writeResolvConf points the node's resolver at the DHCP server's DNS
// (the lab's dnsmasq), as NetworkManager does on RHCOS.
func (a *agent) writeResolvConf() {
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

// mcsCheck is the report line of the bootstrap MCS, once stage 12 has
// started it.
const mcsCheck = "serve mcs :22623"

// startMCS starts the bootstrap Machine Config Server, as the kubelet
// starts the machine-config-server container of the pod stage 12 lands:
// TLS with /etc/ssl/mcs (which stage 12 copies), serving the master
// config under /etc/mcs/bootstrap.
func (a *agent) startMCS(self probe.NodeExpect) (func(), error) {
	cert, err := tls.LoadX509KeyPair("/etc/ssl/mcs/tls.crt", "/etc/ssl/mcs/tls.key")
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	master, err := os.ReadFile(probe.MasterConfigPath)
	if err != nil {
		return nil, fmt.Errorf("the master pool's config: %w", err)
	}
	mcs := &probe.MCS{Mode: probe.MCSBootstrap, Configs: map[string][]byte{"master": master}, Log: a.log, Node: self.Name}
	mcs.OnServe = func(pool, remote string, code int) {
		served := mcs.Served()["master"]
		a.rep.set(mcsCheck, true, false, "bootstrap MCS started by stage 12; served /config/master to %d: %s", len(served), strings.Join(served, " "))
	}
	stop, err := a.serveTLSOn(ignition.MCSPort, cert, mcs)
	if err != nil {
		return nil, err
	}
	a.rep.set(mcsCheck, true, false, "bootstrap MCS started by stage 12 (its pod landed in /etc/kubernetes/manifests)")
	return func() {
		stop()
		a.rep.set(mcsCheck, false, false, "bootstrap MCS stopped: its pod's manifest was removed")
	}, nil
}

// serveTLSOn serves h with TLS on port until the returned stop is called.
func (a *agent) serveTLSOn(port int, cert tls.Certificate, h http.Handler) (func(), error) {
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

// fetchDeadline is how long a node retries its pointer config: 10 minutes
// on a probe lab, a day on a rehearsal lab (the kernel command line says
// which), where the masters wait until the learner runs stage 12 (real
// Ignition retries forever).
func fetchDeadline() time.Duration {
	data, _ := os.ReadFile("/proc/cmdline")
	if hasCmdlineFlag(string(data), probe.RehearsalCmdlineFlag) {
		return 24 * time.Hour
	}
	return 10 * time.Minute
}

func hasCmdlineFlag(cmdline, flag string) bool {
	for _, f := range strings.Fields(cmdline) {
		if f == flag {
			return true
		}
	}
	return false
}

// writeIgnitionFiles writes every storage.files entry of cfg, with its
// mode, as Ignition does in the initramfs.
func writeIgnitionFiles(cfg types.Config) (int, error) {
	n := 0
	for _, f := range cfg.Storage.Files {
		data, _, err := ignition.FileContents(cfg, f.Path)
		if err != nil {
			return n, err
		}
		mode := fs.FileMode(0o644)
		if f.Mode != nil {
			mode = fs.FileMode(*f.Mode)
		}
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
			return n, err
		}
		if err := os.WriteFile(f.Path, data, mode); err != nil {
			return n, err
		}
		if err := os.Chmod(f.Path, mode); err != nil { // past the umask
			return n, err
		}
		n++
	}
	return n, nil
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
	core := loginUsers["core"]
	dir := filepath.Join(core.home, ".ssh", "authorized_keys.d")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ignition"), []byte(strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	for _, p := range []string{core.home, filepath.Join(core.home, ".ssh"), dir, filepath.Join(dir, "ignition")} {
		if err := os.Chown(p, int(core.uid), int(core.gid)); err != nil {
			return err
		}
	}
	return os.Chmod(core.home, 0o700)
}

// setupSudo links sudoPath to the agent and makes it set-user-ID root.
func setupSudo() error {
	self, err := os.Executable()
	if err != nil {
		self = "/init"
	}
	_ = os.Remove(sudoPath)
	if err := os.Link(self, sudoPath); err != nil {
		return fmt.Errorf("link %s to %s: %w", sudoPath, self, err)
	}
	if err := os.Chmod(sudoPath, 0o4755|fs.ModeSetuid); err != nil {
		return err
	}
	for _, name := range standInNames {
		p := filepath.Join(filepath.Dir(sudoPath), name)
		_ = os.Remove(p)
		if err := os.Symlink(self, p); err != nil {
			return fmt.Errorf("link %s: %w", p, err)
		}
	}
	return nil
}

// sudoMain is the sudo stand-in: core (or root) may run any command as
// root without a password, as RHCOS's sudoers lets core. It understands
// the options the stage transport and learners use: -n, -E, -H, -i, -s,
// -u root and --.
func sudoMain(args []string) int {
	uid := os.Getuid()
	if uid != 0 && uid != int(loginUsers["core"].uid) {
		fmt.Fprintln(os.Stderr, "sudo: a password is required (only core may sudo on this node)")
		return 1
	}
	login, keepEnv := false, false
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		opt := args[0]
		args = args[1:]
		switch opt {
		case "--":
			goto run
		case "-n", "--non-interactive", "-H", "--set-home", "-S", "--stdin":
		case "-E", "--preserve-env":
			keepEnv = true
		case "-i", "--login", "-s", "--shell":
			login = true
		case "-u", "--user":
			if len(args) == 0 || (args[0] != "root" && args[0] != "0" && args[0] != "#0") {
				fmt.Fprintln(os.Stderr, "sudo: this node's sudo (a bootlab stand-in) runs commands as root only")
				return 1
			}
			args = args[1:]
		case "-V", "--version":
			fmt.Println("sudo: bootlab's stand-in for sudo on the rehearsal bootstrap (core may run anything as root, as on RHCOS)")
			return 0
		default:
			fmt.Fprintf(os.Stderr, "sudo: option %s is not supported by this node's sudo (a bootlab stand-in)\n", opt)
			return 1
		}
	}
run:
	if len(args) == 0 && !login {
		fmt.Fprintln(os.Stderr, "usage: sudo [-n] [-E] [-i] [--] COMMAND [ARG...]")
		return 1
	}
	if err := unix.Setgroups([]int{0}); err != nil {
		fmt.Fprintf(os.Stderr, "sudo: %v (is %s set-user-ID root?)\n", err, sudoPath)
		return 1
	}
	if err := unix.Setresgid(0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "sudo: %v\n", err)
		return 1
	}
	if err := unix.Setresuid(0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "sudo: %v\n", err)
		return 1
	}
	env := []string{"HOME=/root", "USER=root", "LOGNAME=root", "SHELL=/bin/bash", "PATH=" + defaultPath,
		fmt.Sprintf("SUDO_UID=%d", uid), fmt.Sprintf("SUDO_GID=%d", os.Getgid()), "SUDO_USER=" + userName(uid)}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if keepEnv && name != "PATH" && name != "HOME" && !strings.HasPrefix(name, "LD_") {
			env = append(env, kv)
		} else if name == "TERM" || name == "LANG" || strings.HasPrefix(name, "LC_") {
			env = append(env, kv)
		}
	}
	if login {
		if len(args) == 0 {
			args = []string{"/bin/bash", "-l"}
		} else {
			args = []string{"/bin/bash", "-c", strings.Join(args, " ")}
		}
		_ = os.Chdir("/root")
	}
	path := args[0]
	if !strings.Contains(path, "/") {
		for _, dir := range filepath.SplitList(defaultPath) {
			if fi, err := os.Stat(filepath.Join(dir, path)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				path = filepath.Join(dir, path)
				break
			}
		}
	}
	err := unix.Exec(path, args, env)
	fmt.Fprintf(os.Stderr, "sudo: %s: %v\n", args[0], err)
	return 1
}

func userName(uid int) string {
	for _, u := range loginUsers {
		if int(u.uid) == uid {
			return u.name
		}
	}
	return fmt.Sprint(uid)
}
