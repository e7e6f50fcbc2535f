package verify

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/internal/testutil/dnstest"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/spec"
)

// tcpDNS answers A queries over TCP (DNS's stream framing) from records.
func tcpDNS(t *testing.T, records map[string]string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go dnstest.Serve(c, func(name string, t dnsmessage.Type) []string {
				if t != dnsmessage.TypeA {
					return nil
				}
				if ip, ok := records[name]; ok {
					return []string{ip}
				}
				if strings.HasPrefix(name, "probe-") {
					return []string{records["*.apps"]}
				}
				return nil
			})
		}
	}()
	return ln
}

// Every check that talks to the lab network goes through Options.Dial, over
// TCP: the lab's addresses are reachable only through it (a remote
// hypervisor's tunnel), so here they are not routed at all.
func TestHostChecksDialThroughOptions(t *testing.T) {
	t.Parallel()
	s := &spec.Spec{Name: "v", Profile: spec.ProfileOpenShift, LabDir: t.TempDir(),
		Network: spec.Network{CIDR: "192.0.2.0/24"}, Topology: spec.Topology{Masters: 1}}
	s.Defaults()
	domain := s.Cluster.Domain()
	records := map[string]string{"api." + domain: s.Network.APIAddress, "api-int." + domain: s.Network.APIAddress, "*.apps": s.Network.IngressAddress}
	for _, n := range s.Nodes {
		records[s.FQDN(n)] = n.IP
	}
	dns := tcpDNS(t, records)
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(api.Close)
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { plain.Close() })
	go func() {
		for {
			c, err := plain.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	var mu sync.Mutex
	dialed := map[string]string{}
	tunnel := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialed[addr] = network
		mu.Unlock()
		_, port, _ := net.SplitHostPort(addr)
		var d net.Dialer
		switch port {
		case "53":
			return d.DialContext(ctx, "tcp", dns.Addr().String())
		case strconv.Itoa(loadbalancer.PortAPI):
			return d.DialContext(ctx, "tcp", api.Listener.Addr().String())
		case "80", "443":
			return d.DialContext(ctx, "tcp", plain.Addr().String())
		}
		return nil, errors.New("tunnel: nothing listens there")
	}

	checks, _ := hostChecks(context.Background(), s, false, nil, nil, host.Local{}, tunnel)
	byName := map[string]check.Result{}
	for _, c := range checks {
		byName[c.Name] = c
	}
	for _, name := range []string{"dns api." + domain, "dns api-int." + domain, "dns *.apps." + domain, "lb api :6443", "lb ingress-http :80", "lb ingress-https :443"} {
		c, ok := byName[name]
		if assert.True(t, ok, "no check %q in %v", name, checks) {
			assert.True(t, c.Passed(), "%s: %s", name, c.Detail)
		}
	}
	for _, n := range s.Nodes {
		assert.True(t, byName["dns "+s.FQDN(n)].Passed(), byName["dns "+s.FQDN(n)].Detail)
	}
	mcs := byName["lb machine-config :22623"]
	assert.True(t, mcs.Failed())
	assert.Contains(t, mcs.Detail, "tunnel: nothing listens there")

	// Every lab address was dialled through the tunnel, over TCP.
	gw := net.JoinHostPort(s.Network.Gateway, "53")
	assert.Equal(t, "tcp", dialed[gw], "DNS to the lab's dnsmasq: %v", dialed)
	for _, port := range []int{loadbalancer.PortAPI, loadbalancer.PortMachineConfig, 80, 443} {
		hp := net.JoinHostPort(s.Network.APIAddress, strconv.Itoa(port))
		if port == 80 || port == 443 {
			hp = net.JoinHostPort(s.Network.IngressAddress, strconv.Itoa(port))
		}
		assert.Equal(t, "tcp", dialed[hp], "%s: %v", hp, dialed)
	}
}

// Without an explicit Dial, a remote Host's tunnel is the way to the lab
// network; a local one dials directly.
func TestDialerFollowsTheHost(t *testing.T) {
	t.Parallel()
	_, err := Options{Host: &fileHost{}}.dialer()(context.Background(), "tcp", "192.0.2.1:53")
	assert.ErrorContains(t, err, "no network", "dialled through the remote host")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c, err := Options{}.dialer()(context.Background(), "tcp", ln.Addr().String())
	require.NoError(t, err, "a local lab dials directly")
	c.Close()
}
