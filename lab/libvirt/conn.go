// Package libvirt implements the hypervisor port (lab/hypervisor) over
// go-libvirt RPC connections to one daemon (local socket, qemu+ssh, or the
// test:///default driver through the daemon): one, and more for long calls
// made in parallel (lanes.go). It is the only bootlab package that imports
// go-libvirt, and it never imports lab: the orchestration uses it, not the
// other way round.
package libvirt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"

	golibvirt "github.com/digitalocean/go-libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"
)

// Conn is a connection to a libvirt daemon. Its methods are safe for
// concurrent use: go-libvirt multiplexes calls over a socket, and long
// calls spread over further sockets to the same daemon when many run at
// once (lanes).
type Conn struct {
	l    *golibvirt.Libvirt
	uri  string
	log  *slog.Logger
	host host.Host
	// ownHost: Close closes host too (Connect opened it).
	ownHost bool
	caps    hypervisor.Capabilities
	// lanes spread the long calls over more connections (lanes.go).
	lanes *lanes
}

var _ hypervisor.Hypervisor = (*Conn)(nil)

// LevelXML is the log level of the XML bootlab sends to libvirt: below
// debug, shown with -vv.
const LevelXML = slog.LevelDebug - 4

// logXML logs a definition sent to libvirt at LevelXML.
func (c *Conn) logXML(ctx context.Context, what, xml string) {
	c.log.Log(ctx, LevelXML, what, "xml", xml)
}

// Connect opens uri: qemu:///system, qemu:///session, qemu+ssh://[user@]host[:port]/system
// or test:///default (the in-memory test driver, reached through the local
// daemon). It opens the URI's host (host.Open: one SSH connection for a
// remote hypervisor) and closes it with the Conn.
func Connect(ctx context.Context, uri string, log *slog.Logger) (*Conn, error) {
	if err := checkURI(uri); err != nil {
		return nil, err
	}
	h, err := host.Open(ctx, uri, host.Options{Log: log})
	if err != nil {
		return nil, err
	}
	c, err := ConnectHost(ctx, uri, h, log)
	if err != nil {
		h.Close()
		return nil, err
	}
	c.ownHost = true
	return c, nil
}

func checkURI(uri string) error {
	if _, err := url.Parse(uri); err != nil {
		return fmt.Errorf("libvirt URI %q: %w (check libvirt.uri)", uri, err)
	}
	driver := spec.URIDriver(uri)
	if driver != "qemu" && driver != "test" {
		return fmt.Errorf("libvirt URI %q: driver %q is not supported: use qemu:///system, qemu+ssh://host/system or test:///default (libvirt.uri)", uri, driver)
	}
	return nil
}

// ConnectHost opens uri over h, the URI's host: the daemon's unix socket
// is dialled through h (on a remote host, a stream-local channel of its SSH
// connection, as libvirt's own qemu+ssh does with virt-ssh-helper), so
// libvirt and every other use of the host share one connection and one
// host-key check. The Conn does not close h.
func ConnectHost(ctx context.Context, uri string, h host.Host, log *slog.Logger) (*Conn, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := checkURI(uri); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	u, _ := url.Parse(uri)
	if _, ok := h.(host.LibvirtOnly); ok {
		// qemu+tcp, qemu+tls: go-libvirt's own dialers reach the daemon;
		// the host serves nothing else.
		l, err := golibvirt.ConnectToURI(u)
		if err != nil {
			return nil, fmt.Errorf("connect to libvirt %s: %w", uri, err)
		}
		log.Debug("connected to libvirt", "uri", uri)
		return newConn(l, uri, log, h, func() (*golibvirt.Libvirt, error) { return golibvirt.ConnectToURI(u) }), nil
	}
	var sock string
	// The daemon is asked for its own URI: no transport, no host
	// (qemu+ssh://h/system is qemu:///system on h).
	remoteURI := golibvirt.RemoteURI(u)
	if h.Remote() {
		sock = host.RemoteSocket(uri)
	} else {
		// Local: the system socket, or the per-user socket for qemu:///session.
		sock = "/var/run/libvirt/libvirt-sock"
		if u.Path == "/session" {
			sock = sessionSocket()
		}
		if s := u.Query().Get("socket"); s != "" {
			sock = s
		}
	}
	dial := func() (*golibvirt.Libvirt, error) {
		l := golibvirt.NewWithDialer(hostDialer{ctx: ctx, h: h, sock: sock})
		return l, l.ConnectToURI(remoteURI)
	}
	l, err := dial()
	if err != nil {
		if h.Remote() {
			return nil, fmt.Errorf("connect to libvirt %s through %s (socket %s there): %w (is libvirtd running on that host?)", uri, h.Name(), sock, err)
		}
		if s := u.Query().Get("socket"); s != "" {
			return nil, fmt.Errorf("connect to libvirt %s: the socket %s it names (socket=) cannot be reached: %w: check that path, or drop socket= to use the daemon's own", uri, s, err)
		}
		return nil, fmt.Errorf("connect to libvirt %s through %s: %w (is libvirtd running? start it: `systemctl start libvirtd`, or without systemd `setsid -f tini -s -- libvirtd`)", uri, sock, err)
	}
	log.Debug("connected to libvirt", "uri", uri, "host", h.Name())
	return newConn(l, uri, log, h, dial), nil
}

// newConn is a Conn over l. dial opens another connection to the same
// daemon, for the lanes; the test driver, local or over SSH, gets none (a
// test:///file URI is a new, empty driver on every connection).
func newConn(l *golibvirt.Libvirt, uri string, log *slog.Logger, h host.Host, dial func() (*golibvirt.Libvirt, error)) *Conn {
	caps := CapabilitiesOf(uri)
	if spec.URIDriver(uri) == "test" {
		dial = nil
	}
	// Save images are files of the daemon's machine that bootlab reads and
	// writes: only a daemon on this one.
	caps.SavesMemory = caps.RunsGuests && !h.Remote()
	return &Conn{l: l, uri: uri, log: log, host: h, caps: caps, lanes: newLanes(l, dial)}
}

// hostDialer opens the daemon's socket on the host (go-libvirt's
// socket.Dialer has no context: the one given to ConnectHost bounds it).
type hostDialer struct {
	ctx  context.Context
	h    host.Host
	sock string
}

func (d hostDialer) Dial() (net.Conn, error) {
	return d.h.Dial(d.ctx, "unix", d.sock)
}

// CapabilitiesOf answers, from the URI, what a hypervisor at uri can do:
// the qemu driver everything, the local test driver (test:///default)
// nothing but define objects. It is the one place the URI decides. The
// test driver over SSH (test+ssh://) plays a remote qemu hypervisor: the
// remote integration tests drive everything up does on another machine
// with it, without VMs.
func CapabilitiesOf(uri string) hypervisor.Capabilities {
	if spec.ClassifyURI(uri) == spec.URITest {
		return hypervisor.Capabilities{}
	}
	return hypervisor.Full()
}

// Capabilities are CapabilitiesOf the URI connected to.
func (c *Conn) Capabilities() hypervisor.Capabilities { return c.caps }

// Host is the machine the daemon runs on.
func (c *Conn) Host() host.Host { return c.host }

func sessionSocket() string {
	if os.Geteuid() == 0 {
		home, _ := os.UserHomeDir()
		return filepath.Join(home, ".cache", "libvirt", "libvirt-sock")
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "libvirt", "libvirt-sock")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("libvirt-%d", os.Geteuid()), "libvirt-sock")
}

// Close ends the connection (and the host's, when Connect opened it).
func (c *Conn) Close() error {
	c.lanes.closeExtra()
	err := c.l.Disconnect()
	if c.ownHost {
		_ = c.host.Close()
	}
	if err != nil {
		return fmt.Errorf("disconnect from libvirt %s: %w", c.uri, err)
	}
	return nil
}

// URI is the URI this connection was opened with.
func (c *Conn) URI() string { return c.uri }

func code(err error) golibvirt.ErrorNumber {
	var e golibvirt.Error
	if errors.As(err, &e) {
		return golibvirt.ErrorNumber(e.Code)
	}
	return -1
}

// wrap names the operation and the object, and turns libvirt's "no such
// object" codes into hypervisor.ErrNotFound.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	what := fmt.Sprintf(format, args...)
	switch code(err) {
	case golibvirt.ErrNoDomain, golibvirt.ErrNoNetwork, golibvirt.ErrNoStoragePool, golibvirt.ErrNoStorageVol, golibvirt.ErrNoDomainSnapshot:
		return fmt.Errorf("%s: %w: %s", what, hypervisor.ErrNotFound, err.Error())
	case golibvirt.ErrNoSupport:
		return fmt.Errorf("%s: %w: %s", what, hypervisor.ErrUnsupported, err.Error())
	}
	return fmt.Errorf("%s: %w", what, err)
}

func uuidString(u golibvirt.UUID) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// ---- HostInfo

// LibvirtVersion is the daemon's libvirt version, e.g. "9.0.0".
func (c *Conn) LibvirtVersion(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	v, err := c.l.ConnectGetLibVersion()
	if err != nil {
		return "", wrap(err, "get libvirt version")
	}
	return fmt.Sprintf("%d.%d.%d", v/1000000, (v/1000)%1000, v%1000), nil
}

// DomainTypes lists the domain types offered for x86_64 hvm guests.
func (c *Conn) DomainTypes(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	raw, err := c.l.ConnectGetCapabilities()
	if err != nil {
		return nil, wrap(err, "get hypervisor capabilities")
	}
	var caps libvirtxml.Caps
	if err := caps.Unmarshal(raw); err != nil {
		return nil, fmt.Errorf("parse hypervisor capabilities: %w", err)
	}
	seen := map[string]bool{}
	var out []string
	for _, g := range caps.Guests {
		if g.Arch.Name != "x86_64" || g.OSType != "hvm" {
			continue
		}
		for _, d := range g.Arch.Domains {
			if !seen[d.Type] {
				seen[d.Type] = true
				out = append(out, d.Type)
			}
		}
	}
	return out, nil
}

// Networks lists every network with its bridge and addresses.
func (c *Conn) Networks(ctx context.Context) ([]hypervisor.NetworkInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	nets, _, err := c.l.ConnectListAllNetworks(1, 0)
	if err != nil {
		return nil, wrap(err, "list networks")
	}
	var out []hypervisor.NetworkInfo
	for _, n := range nets {
		o, err := c.networkObject(n)
		if err != nil {
			if errors.Is(err, hypervisor.ErrNotFound) {
				continue // removed meanwhile
			}
			return nil, err
		}
		var nx libvirtxml.Network
		if err := nx.Unmarshal(o.XML); err != nil {
			return nil, fmt.Errorf("parse network %s: %w", n.Name, err)
		}
		info := hypervisor.NetworkInfo{Name: n.Name, UUID: o.UUID, Active: o.Active}
		if nx.Bridge != nil {
			info.Bridge = nx.Bridge.Name
		}
		for _, ip := range nx.IPs {
			if p, ok := ipPrefix(ip); ok {
				info.Prefixes = append(info.Prefixes, p)
			}
		}
		out = append(out, info)
	}
	return out, nil
}

func ipPrefix(ip libvirtxml.NetworkIP) (netip.Prefix, bool) {
	a, err := netip.ParseAddr(ip.Address)
	if err != nil {
		return netip.Prefix{}, false
	}
	bits := int(ip.Prefix)
	if bits == 0 && ip.Netmask != "" {
		m, err := netip.ParseAddr(ip.Netmask)
		if err != nil {
			return netip.Prefix{}, false
		}
		for _, b := range m.AsSlice() {
			for i := 7; i >= 0; i-- {
				if b&(1<<i) != 0 {
					bits++
				}
			}
		}
	}
	if bits == 0 {
		bits = a.BitLen()
		if a.Is4() {
			bits = 24 // libvirt's default for IPv4 without prefix or netmask
		}
	}
	p, err := a.Prefix(bits)
	return p, err == nil
}
