package loadbalancer

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil"
)

const goldenDir = "../../testdata/haproxy"

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, filepath.Join(goldenDir, name), got)
}

func sample() Config {
	return Config{
		Name:        "sample",
		BindAddress: "192.168.126.1",
		StatsPort:   9000,
		Dir:         "/var/lib/bootlab/labs/sample/haproxy",
		Frontends: []Frontend{
			{Name: "api", Port: 6443, Check: CheckReadyz, Servers: []Server{
				{Name: "bootstrap", Address: "192.168.126.10", Backup: true},
				{Name: "master-0", Address: "192.168.126.11"},
			}},
			{Name: "machine-config", Port: 22623, Check: CheckHealthz, Servers: []Server{
				{Name: "master-0", Address: "192.168.126.11:22623"},
			}},
			{Name: "ingress-https", Port: 443, Check: CheckTCP, Address: "192.168.126.2", Servers: []Server{
				{Name: "worker-0", Address: "192.168.126.20"},
			}},
		},
	}
}

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	got, err := Render(sample())
	require.NoError(t, err)
	golden(t, "render-sample.cfg", got)
}

func TestRenderIsDeterministic(t *testing.T) {
	t.Parallel()
	a, err := Render(sample())
	require.NoError(t, err)
	b, err := Render(sample())
	require.NoError(t, err)
	assert.Equal(t, a, b)
}

func TestRenderCheckInterval(t *testing.T) {
	t.Parallel()
	c := sample()
	c.CheckInterval = 250 * time.Millisecond
	got, err := Render(c)
	require.NoError(t, err)
	assert.Contains(t, string(got), "default-server inter 250ms fall 3 rise 2")
	c.CheckInterval = 0
	got, err = Render(c)
	require.NoError(t, err)
	assert.Contains(t, string(got), "default-server inter 5s fall 3 rise 2")
	c.CheckInterval, c.TransitionInterval = 2*time.Second, 250*time.Millisecond
	got, err = Render(c)
	require.NoError(t, err)
	assert.Contains(t, string(got), "default-server inter 2s fastinter 250ms downinter 250ms fall 3 rise 2")
}

func TestRenderRejects(t *testing.T) {
	t.Parallel()
	long := "/" + string(make([]byte, 0))
	for i := 0; i < 12; i++ {
		long += "/abcdefghi"
	}
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"relative dir", func(c *Config) { c.Dir = "haproxy" }, `load balancer directory "haproxy" must be an absolute path`},
		{"socket too long", func(c *Config) { c.Dir = long }, "more than the 107 a unix socket allows: choose a shorter labDir"},
		{"bad bind", func(c *Config) { c.BindAddress = "api.example" }, `bind address "api.example" is not an IP address (network.apiAddress)`},
		{"stats port", func(c *Config) { c.StatsPort = 0 }, "stats port 0 out of range"},
		{"no frontends", func(c *Config) { c.Frontends = nil }, `load balancer "sample" has no frontends`},
		{"bad frontend name", func(c *Config) { c.Frontends[0].Name = "api server" }, `frontend name "api server"`},
		{"reserved frontend name", func(c *Config) { c.Frontends[0].Name = "stats" }, `frontend name "stats" used twice (or reserved)`},
		{"duplicate frontend", func(c *Config) { c.Frontends[1].Name = "api" }, `frontend name "api" used twice`},
		{"port", func(c *Config) { c.Frontends[0].Port = 70000 }, "frontend api: port 70000 out of range"},
		{"frontend address", func(c *Config) { c.Frontends[2].Address = "x" }, `frontend ingress-https: bind address "x" is not an IP address`},
		{"check", func(c *Config) { c.Frontends[0].Check = "http" }, `frontend api: check "http" must be "readyz", "healthz" or "tcp"`},
		{"no servers", func(c *Config) { c.Frontends[0].Servers = nil }, "frontend api has no servers"},
		{"duplicate server", func(c *Config) { c.Frontends[0].Servers[1].Name = "bootstrap" }, `frontend api: server name "bootstrap" is empty, invalid or repeated`},
		{"server address", func(c *Config) { c.Frontends[0].Servers[1].Address = "master-0" }, `frontend api: server master-0: address "master-0" is neither an IP nor ip:port`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := sample()
			tc.mutate(&c)
			_, err := Render(c)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestPaths(t *testing.T) {
	t.Parallel()
	c := sample()
	assert.Equal(t, "/var/lib/bootlab/labs/sample/haproxy/haproxy.cfg", c.ConfigPath())
	assert.Equal(t, "/var/lib/bootlab/labs/sample/haproxy/haproxy.pid", c.PIDPath())
	assert.Equal(t, "/var/lib/bootlab/labs/sample/haproxy/admin.sock", c.SocketPath())
}
