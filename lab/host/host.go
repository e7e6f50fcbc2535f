package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bootlab/bootlab/internal/atomicfile"
	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/lab/spec"
)

// Host is the hypervisor's machine. Local and SSH behave the same: Run
// gives bash the command line (as the connecting user: no sudo), WriteFile
// replaces a file atomically with the given permission bits (creating its
// directory), ReadFile of a missing file wraps fs.ErrNotExist, Dial opens
// "tcp" or "unix" connections from the host.
type Host interface {
	// Name says which host this is in messages: "localhost" or user@host:port.
	Name() string
	Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error)
	WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error
	ReadFile(ctx context.Context, path string) ([]byte, error)
	Dial(ctx context.Context, network, addr string) (net.Conn, error)
	// Remote is true when the host is not this machine.
	Remote() bool
	Close() error
}

// Output runs cmd on h and returns its stdout; a non-zero exit is an error
// naming the host, the command and stderr's last line.
func Output(ctx context.Context, h Host, cmd string) (string, error) {
	var out, errb bytes.Buffer
	code, err := h.Run(ctx, cmd, nil, &out, &errb)
	if err != nil {
		return out.String(), err
	}
	if r := (sshc.Result{Stderr: errb.Bytes(), ExitCode: code}); code != 0 {
		return out.String(), fmt.Errorf("on %s: %w", h.Name(), r.Err(cmd))
	}
	return out.String(), nil
}

// Local is this machine.
type Local struct{}

var _ Host = Local{}

func (Local) Name() string { return "localhost" }
func (Local) Remote() bool { return false }
func (Local) Close() error { return nil }

// Run runs cmd with bash in bootlab's working directory, or in / when
// the user removed that directory: there bash and haproxy -c fail.
func (Local) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	c := exec.CommandContext(ctx, "bash", "-c", cmd)
	if _, err := os.Getwd(); err != nil {
		c.Dir = "/"
	}
	c.Stdin, c.Stdout, c.Stderr = stdin, stdout, stderr
	err := c.Run()
	if ctx.Err() != nil {
		return -1, ctx.Err()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, fmt.Errorf("run on localhost: %w", err)
	}
	return 0, nil
}

// ReadFile reads path.
func (Local) ReadFile(_ context.Context, path string) ([]byte, error) {
	return os.ReadFile(path)
}

// WriteFile replaces path with data, mode, atomically (atomicfile.Write),
// making its directory.
func (Local) WriteFile(_ context.Context, path string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, mode)
}

// Dial connects from this machine.
func (Local) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return (&net.Dialer{}).DialContext(ctx, network, addr)
}

// SSH is a remote host reached over one SSH connection.
type SSH struct {
	c *sshc.Client
}

var _ Host = (*SSH)(nil)

// NewSSH makes a Host of a connected client; Close closes the client.
func NewSSH(c *sshc.Client) *SSH { return &SSH{c: c} }

// Client is the SSH connection: nodes behind the hypervisor are dialled
// through it (sshc.Config.Via).
func (h *SSH) Client() *sshc.Client { return h.c }

func (h *SSH) Name() string { return h.c.String() }
func (h *SSH) Remote() bool { return true }
func (h *SSH) Close() error { return h.c.Close() }

func (h *SSH) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return h.c.Stream(ctx, cmd, stdin, stdout, stderr)
}

func (h *SSH) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return h.c.ReadFile(ctx, path)
}

func (h *SSH) WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	return h.c.WriteFile(ctx, path, data, mode)
}

func (h *SSH) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return h.c.DialContext(ctx, network, addr)
}

// Options tune Open.
type Options struct {
	Log *slog.Logger
}

// IsRemote says whether a libvirt URI names another machine
// (qemu+ssh://user@host/system) rather than this one (qemu:///system,
// qemu+unix:///system).
func IsRemote(uri string) bool { return spec.ClassifyURI(uri).Remote() }

// SSHOnly reports whether uri reaches a remote machine by SSH, the only
// way bootlab can run the load balancer and keep files there.
func SSHOnly(uri string) bool { return spec.ClassifyURI(uri) == spec.URIRemoteSSH }

// LibvirtOnly is a remote machine reached by a transport that carries
// libvirt and nothing else (qemu+tcp, qemu+tls): every operation fails,
// saying to use qemu+ssh.
type LibvirtOnly struct{ URI string }

var _ Host = LibvirtOnly{}

func (h LibvirtOnly) err() error {
	return fmt.Errorf("libvirt URI %s reaches the daemon only: bootlab runs the load balancer and keeps files on the hypervisor's machine over SSH, use qemu+ssh://user@host/system (libvirt.uri)", redact(h.URI))
}
func (h LibvirtOnly) Name() string {
	if u, err := url.Parse(h.URI); err == nil {
		return u.Host
	}
	return h.URI
}
func (h LibvirtOnly) Remote() bool { return true }
func (h LibvirtOnly) Close() error { return nil }
func (h LibvirtOnly) Run(context.Context, string, io.Reader, io.Writer, io.Writer) (int, error) {
	return -1, h.err()
}
func (h LibvirtOnly) ReadFile(context.Context, string) ([]byte, error) { return nil, h.err() }
func (h LibvirtOnly) WriteFile(context.Context, string, []byte, fs.FileMode) error {
	return h.err()
}
func (h LibvirtOnly) Dial(context.Context, string, string) (net.Conn, error) { return nil, h.err() }

// Open returns the host of a libvirt URI: Local for qemu:///system,
// qemu:///session and test:///default; SSH for qemu+ssh://[user@]host[:port]/system
// with libvirt's query parameters keyfile=FILE (default: ~/.ssh/id_* and
// the ssh-agent), known_hosts=FILE (default ~/.ssh/known_hosts, trusted on
// first use) and no_verify=1 (accept any host key).
func Open(ctx context.Context, uri string, o Options) (Host, error) {
	if _, err := url.Parse(uri); err != nil {
		return nil, fmt.Errorf("libvirt URI %q: %w (check libvirt.uri)", uri, err)
	}
	if !IsRemote(uri) {
		return Local{}, nil
	}
	if !SSHOnly(uri) {
		return LibvirtOnly{URI: uri}, nil
	}
	cfg, err := SSHConfig(uri)
	if err != nil {
		return nil, err
	}
	cfg.Log = o.Log
	if cfg.Log != nil && cfg.InsecureIgnoreHostKey {
		cfg.Log.Warn("not checking the hypervisor's host key (no_verify=1 in libvirt.uri)", "host", cfg.Host)
	}
	c, err := sshc.Dial(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("libvirt URI %s: %w", redact(uri), err)
	}
	return NewSSH(c), nil
}

// SSHConfig is how a qemu+ssh URI's host is reached.
func SSHConfig(uri string) (sshc.Config, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return sshc.Config{}, fmt.Errorf("libvirt URI %q: %w (check libvirt.uri)", uri, err)
	}
	if spec.URITransport(uri) != "ssh" {
		return sshc.Config{}, fmt.Errorf("libvirt URI %q: only the ssh transport reaches a remote hypervisor: use qemu+ssh://user@host/system (libvirt.uri)", redact(uri))
	}
	if u.Hostname() == "" {
		return sshc.Config{}, fmt.Errorf("libvirt URI %q: no host: use qemu+ssh://user@host/system (libvirt.uri)", redact(uri))
	}
	cfg := sshc.Config{Host: u.Hostname(), Agent: true}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return sshc.Config{}, fmt.Errorf("libvirt URI %q: port %q is not a port number (libvirt.uri)", redact(uri), p)
		}
		cfg.Port = n
	}
	if u.User != nil && u.User.Username() != "" {
		cfg.User = u.User.Username()
	} else if cu, err := user.Current(); err == nil {
		cfg.User = cu.Username // as libvirt (and ssh) do
	}
	q := u.Query()
	if k := q.Get("keyfile"); k != "" {
		cfg.KeyFiles = []string{expandHome(k)}
	}
	if k := q.Get("known_hosts"); k != "" {
		cfg.KnownHosts = expandHome(k)
	} else if cfg.KnownHosts, err = sshc.DefaultKnownHosts(); err != nil {
		return sshc.Config{}, err
	}
	if v := q.Get("no_verify"); v != "" && v != "0" {
		cfg.InsecureIgnoreHostKey = true
	}
	return cfg, nil
}

// RemoteSocket is the libvirt daemon's socket on the host of uri: the
// ?socket= parameter, or the system daemon's /var/run/libvirt/libvirt-sock.
func RemoteSocket(uri string) string {
	if u, err := url.Parse(uri); err == nil {
		if s := u.Query().Get("socket"); s != "" {
			return s
		}
	}
	return "/var/run/libvirt/libvirt-sock"
}

func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

// redact drops a password from a URI before it is printed.
func redact(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.User == nil {
		return uri
	}
	return u.Redacted()
}
