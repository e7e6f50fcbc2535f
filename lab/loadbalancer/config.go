package loadbalancer

import (
	"bytes"
	_ "embed"
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
	"text/template"
	"time"

	"github.com/bootlab/bootlab/lab/host"
)

// Health checks a Frontend can ask of its servers.
const (
	// CheckReadyz is an HTTPS GET /readyz (the Kubernetes API, 6443).
	CheckReadyz = "readyz"
	// CheckHealthz is an HTTPS GET /healthz (the Machine Config Server, 22623).
	CheckHealthz = "healthz"
	// CheckTCP is a plain TCP connect (ingress 80/443).
	CheckTCP = "tcp"
)

// File names inside Config.Dir.
const (
	ConfigFile = "haproxy.cfg"
	PIDFile    = "haproxy.pid"
	SocketFile = "admin.sock"
	// StateFile carries the servers' health over a reload.
	StateFile = "haproxy.state"
)

// DefaultCheckInterval is the health check period: with fall 3 a dead API
// server leaves the rotation within 15 s, inside the 30 s the docs allow.
const DefaultCheckInterval = 5 * time.Second

// Server is one backend server. Address is an IP (the frontend's port is
// used) or an ip:port.
type Server struct {
	Name    string
	Address string
	// Backup servers take traffic only when every other server is down.
	Backup bool
}

// Frontend is one TCP listener and its servers.
type Frontend struct {
	Name string
	Port int
	// Check is CheckReadyz, CheckHealthz or CheckTCP.
	Check   string
	Servers []Server
	// Address overrides Config.BindAddress for this listener (ingress binds
	// the lab's ingress address).
	Address string
}

// Config is one lab's load balancer.
type Config struct {
	// Name is the lab name; it is written into haproxy.cfg.
	Name string
	// BindAddress is the lab's API address: every frontend without its own
	// Address, and the stats endpoint, listen there.
	BindAddress string
	// StatsPort serves /stats (HTML) and /stats;csv over HTTP.
	StatsPort int
	Frontends []Frontend
	// Dir holds haproxy.cfg, haproxy.pid and admin.sock.
	Dir string
	// Binary is the haproxy executable; "" means haproxy on PATH.
	Binary string
	// CheckInterval is the health check period; 0 means DefaultCheckInterval.
	CheckInterval time.Duration
	// TransitionInterval is the check period of a server that is down or
	// changing state (haproxy's downinter and fastinter): a server that
	// starts answering is in rotation after rise checks this far apart, not
	// CheckInterval apart. 0 means CheckInterval.
	TransitionInterval time.Duration
	// Host runs haproxy and holds Dir: the hypervisor's machine, where the
	// lab's addresses are. nil means this machine.
	Host host.Host
}

func (c Config) host() host.Host {
	if c.Host == nil {
		return host.Local{}
	}
	return c.Host
}

// ConfigPath, PIDPath and SocketPath are the files of the load balancer in Dir.
func (c Config) ConfigPath() string { return filepath.Join(c.Dir, ConfigFile) }
func (c Config) PIDPath() string    { return filepath.Join(c.Dir, PIDFile) }
func (c Config) SocketPath() string { return filepath.Join(c.Dir, SocketFile) }
func (c Config) StatePath() string  { return filepath.Join(c.Dir, StateFile) }

func (c Config) binary() string {
	if c.Binary == "" {
		return "haproxy"
	}
	return c.Binary
}

// maxSocketPath is sun_path's size minus the NUL on Linux.
const maxSocketPath = 107

// Validate reports the first problem that would make haproxy.cfg wrong.
func (c Config) Validate() error {
	if c.Dir == "" || !filepath.IsAbs(c.Dir) {
		return fmt.Errorf("load balancer directory %q must be an absolute path", c.Dir)
	}
	if n := len(c.SocketPath()); n > maxSocketPath {
		return fmt.Errorf("load balancer admin socket %s is %d bytes long, more than the %d a unix socket allows: choose a shorter labDir", c.SocketPath(), n, maxSocketPath)
	}
	if _, err := netip.ParseAddr(c.BindAddress); err != nil {
		return fmt.Errorf("load balancer bind address %q is not an IP address (network.apiAddress)", c.BindAddress)
	}
	if c.StatsPort <= 0 || c.StatsPort > 65535 {
		return fmt.Errorf("load balancer stats port %d out of range", c.StatsPort)
	}
	if len(c.Frontends) == 0 {
		return fmt.Errorf("load balancer %q has no frontends", c.Name)
	}
	names := map[string]bool{"stats": true}
	for _, f := range c.Frontends {
		if f.Name == "" || !validName(f.Name) {
			return fmt.Errorf("frontend name %q: use letters, digits, '-', '_' and '.'", f.Name)
		}
		if names[f.Name] {
			return fmt.Errorf("frontend name %q used twice (or reserved)", f.Name)
		}
		names[f.Name] = true
		if f.Port <= 0 || f.Port > 65535 {
			return fmt.Errorf("frontend %s: port %d out of range", f.Name, f.Port)
		}
		if f.Address != "" {
			if _, err := netip.ParseAddr(f.Address); err != nil {
				return fmt.Errorf("frontend %s: bind address %q is not an IP address", f.Name, f.Address)
			}
		}
		switch f.Check {
		case CheckReadyz, CheckHealthz, CheckTCP:
		default:
			return fmt.Errorf("frontend %s: check %q must be %q, %q or %q", f.Name, f.Check, CheckReadyz, CheckHealthz, CheckTCP)
		}
		if len(f.Servers) == 0 {
			return fmt.Errorf("frontend %s has no servers", f.Name)
		}
		seen := map[string]bool{}
		for _, s := range f.Servers {
			if !validName(s.Name) || seen[s.Name] {
				return fmt.Errorf("frontend %s: server name %q is empty, invalid or repeated", f.Name, s.Name)
			}
			seen[s.Name] = true
			if _, err := serverAddr(s.Address, f.Port); err != nil {
				return fmt.Errorf("frontend %s: server %s: %w", f.Name, s.Name, err)
			}
		}
	}
	return nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return false
		}
	}
	return true
}

// serverAddr returns ip:port for a server address given as ip or ip:port.
func serverAddr(addr string, port int) (string, error) {
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		return ap.String(), nil
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return "", fmt.Errorf("address %q is neither an IP nor ip:port", addr)
	}
	return netip.AddrPortFrom(a, uint16(port)).String(), nil
}

//go:embed haproxy.cfg.tmpl
var cfgTemplate string

type tmplServer struct {
	Name, Addr string
	Backup     bool
}

type tmplFrontend struct {
	Name, Bind, Check string
	// CheckOpts ends every server line: the TLS checks of the API and MCS
	// skip verification because the LB has no business trusting the cluster CA.
	CheckOpts string
	Servers   []tmplServer
}

type tmplData struct {
	Name, Socket, StateFile, StatsBind, Inter, Transition string
	Frontends                                             []tmplFrontend
}

// haproxyDuration is d in haproxy's notation: whole seconds, else milliseconds.
func haproxyDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// Render returns haproxy.cfg for c.
func Render(c Config) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	inter := c.CheckInterval
	if inter <= 0 {
		inter = DefaultCheckInterval
	}
	d := tmplData{
		Name:      c.Name,
		Socket:    c.SocketPath(),
		StateFile: c.StatePath(),
		StatsBind: bindAddr(c.BindAddress, c.StatsPort),
		Inter:     haproxyDuration(inter),
	}
	if c.TransitionInterval > 0 {
		d.Transition = haproxyDuration(c.TransitionInterval)
	}
	for _, f := range c.Frontends {
		addr := c.BindAddress
		if f.Address != "" {
			addr = f.Address
		}
		tf := tmplFrontend{Name: f.Name, Bind: bindAddr(addr, f.Port), Check: f.Check, CheckOpts: "check"}
		if f.Check != CheckTCP {
			tf.CheckOpts = "check check-ssl verify none"
		}
		for _, s := range f.Servers {
			sa, _ := serverAddr(s.Address, f.Port) // checked by Validate
			tf.Servers = append(tf.Servers, tmplServer{Name: s.Name, Addr: sa, Backup: s.Backup})
		}
		d.Frontends = append(d.Frontends, tf)
	}
	t, err := template.New("haproxy.cfg").Option("missingkey=error").Parse(cfgTemplate)
	if err != nil {
		return nil, fmt.Errorf("parse haproxy.cfg template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return nil, fmt.Errorf("render haproxy.cfg: %w", err)
	}
	return b.Bytes(), nil
}

func bindAddr(ip string, port int) string {
	a, _ := netip.ParseAddr(ip)
	return netip.AddrPortFrom(a, uint16(port)).String()
}
