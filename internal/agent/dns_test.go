package agent

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/bootlab/bootlab/internal/wire"
)

// dnsServer answers A queries on loopback UDP with what answer returns
// for the query's count (1, 2, ...); AAAA queries get no records.
type dnsServer struct {
	conn    net.PacketConn
	queries atomic.Int32
}

func startDNS(t *testing.T, answer func(n int) netip.Addr) *dnsServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &dnsServer{conn: pc}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var m dnsmessage.Message
			if m.Unpack(buf[:n]) != nil || len(m.Questions) != 1 {
				continue
			}
			q := m.Questions[0]
			resp := dnsmessage.Message{Header: dnsmessage.Header{ID: m.ID, Response: true, Authoritative: true}, Questions: m.Questions}
			if q.Type == dnsmessage.TypeA {
				a := answer(int(s.queries.Add(1)))
				resp.Answers = []dnsmessage.Resource{{Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 0},
					Body: &dnsmessage.AResource{A: a.As4()}}}
			}
			out, err := resp.Pack()
			if err == nil {
				_, _ = pc.WriteTo(out, from)
			}
		}
	}()
	return s
}

func testAgent(t *testing.T, srv *dnsServer, tm dnsTimes) (*Agent, func() []wire.Check) {
	t.Helper()
	var mu sync.Mutex
	var out bytes.Buffer
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", srv.conn.LocalAddr().String())
	}}
	a := &Agent{log: slog.New(slog.DiscardHandler), rep: newReporter(&Console{w: &lockedWriter{mu: &mu, w: &out}}),
		dialer: &net.Dialer{Resolver: r}, dnsTimes: tm}
	checks := func() []wire.Check {
		a.rep.mu.Lock()
		defer a.rep.mu.Unlock()
		return append([]wire.Check(nil), a.rep.rep.Checks...)
	}
	return a, checks
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A name that answers wrong until after the check's deadline fails, then
// passes once the right answer comes, saying it failed before; checkDNS
// itself returns at the deadline (the agent goes on).
func TestDNSCheckFailsThenMendsWhenTheAnswerComesRight(t *testing.T) {
	t.Parallel()
	right, wrong := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.99")
	var fixed atomic.Bool
	srv := startDNS(t, func(int) netip.Addr {
		if fixed.Load() {
			return right
		}
		return wrong
	})
	a, checks := testAgent(t, srv, dnsTimes{deadline: 200 * time.Millisecond, try: time.Second, pause: 20 * time.Millisecond, recheck: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		a.checkDNS(ctx, wire.NameExpect{Name: "api.ocp.lab.local", Address: right.String()})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("checkDNS did not return at its deadline")
	}
	c := checks()
	require.Len(t, c, 1)
	assert.Equal(t, "dns api.ocp.lab.local", c[0].Name)
	assert.False(t, c[0].OK)
	assert.False(t, c[0].Pending, "failed, not retrying: verify --timeout 0 reports it")
	assert.Contains(t, c[0].Detail, "api.ocp.lab.local resolves to 10.0.0.99, expected 10.0.0.1")

	// Still wrong a while later: still failed, asked again meanwhile.
	asked := srv.queries.Load()
	time.Sleep(300 * time.Millisecond)
	assert.Greater(t, srv.queries.Load(), asked, "the failed name is asked again")
	assert.False(t, checks()[0].OK)

	fixed.Store(true)
	require.Eventually(t, func() bool { return checks()[0].OK }, 10*time.Second, 20*time.Millisecond, "the check passes once the answer is right")
	assert.Contains(t, checks()[0].Detail, "api.ocp.lab.local -> 10.0.0.1")
	assert.Contains(t, checks()[0].Detail, "failed before")
	n := srv.queries.Load()
	time.Sleep(200 * time.Millisecond)
	assert.Equal(t, n, srv.queries.Load(), "a passed name is not asked again")
}

// A right answer at once passes at once, with no re-asking.
func TestDNSCheckPassesAtOnce(t *testing.T) {
	t.Parallel()
	right := netip.MustParseAddr("10.0.0.11")
	srv := startDNS(t, func(int) netip.Addr { return right })
	a, checks := testAgent(t, srv, dnsTimes{deadline: time.Second, try: time.Second, pause: 20 * time.Millisecond, recheck: 20 * time.Millisecond})
	a.checkDNS(context.Background(), wire.NameExpect{Name: "master-0.ocp.lab.local", Address: right.String()})
	c := checks()
	require.Len(t, c, 1)
	assert.True(t, c[0].OK)
	assert.Equal(t, "master-0.ocp.lab.local -> 10.0.0.11", c[0].Detail)
}
