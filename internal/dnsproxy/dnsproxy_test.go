package dnsproxy

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"
)

// upstream is a DNS server over TCP only (like a lab's dnsmasq seen
// through an SSH tunnel): it answers every A query with 192.0.2.7.
func upstream(t *testing.T) (addr string, queries *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	queries = &atomic.Int32{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for {
					var size [2]byte
					if _, err := io.ReadFull(c, size[:]); err != nil {
						return
					}
					q := make([]byte, binary.BigEndian.Uint16(size[:]))
					if _, err := io.ReadFull(c, q); err != nil {
						return
					}
					queries.Add(1)
					var m dnsmessage.Message
					if err := m.Unpack(q); err != nil {
						return
					}
					m.Header.Response, m.Header.Authoritative = true, true
					for _, qq := range m.Questions {
						if qq.Type == dnsmessage.TypeA {
							m.Answers = append(m.Answers, dnsmessage.Resource{
								Header: dnsmessage.ResourceHeader{Name: qq.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 5},
								Body:   &dnsmessage.AResource{A: [4]byte{192, 0, 2, 7}},
							})
						}
					}
					a, err := m.Pack()
					if err != nil {
						return
					}
					out := binary.BigEndian.AppendUint16(nil, uint16(len(a)))
					if _, err := c.Write(append(out, a...)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String(), queries
}

func resolver(network, addr string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
}

// A resolver that speaks UDP (every stub resolver does first) and one that
// speaks TCP both get the upstream's answers through the proxy, and the
// upstream sees only TCP.
func TestProxyForwardsUDPAndTCPOverTCP(t *testing.T) {
	// Not parallel: Listen takes a free UDP port, then the same number for
	// TCP: a TCP listener of a test beside it may hold that number (Listen
	// then tries another, TestListenPairTriesAnotherPort).
	up, queries := upstream(t)
	var dials atomic.Int32
	p, err := Listen("127.0.0.1:0", func(ctx context.Context) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, "tcp", up)
	}, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx) }()

	for _, network := range []string{"udp", "tcp"} {
		addrs, err := resolver(network, p.Addr()).LookupIPAddr(context.Background(), "api.ocp.lab.local")
		require.NoError(t, err, network)
		require.NotEmpty(t, addrs, network)
		assert.Equal(t, "192.0.2.7", addrs[0].IP.String(), network)
	}
	assert.Positive(t, queries.Load())
	assert.Positive(t, dials.Load(), "every query went through the dial function")

	cancel()
	require.NoError(t, <-served)
	_, err = net.Dial("tcp", p.Addr())
	assert.Error(t, err, "Serve closed its listeners when its context ended")
}

// When the upstream cannot be reached, the proxy keeps serving: the next
// query, once the upstream is back, is answered.
func TestProxySurvivesAnUnreachableUpstream(t *testing.T) {
	// Not parallel: Listen takes a free UDP port, then the same number for
	// TCP: a TCP listener of a test beside it may hold that number (Listen
	// then tries another, TestListenPairTriesAnotherPort).
	up, _ := upstream(t)
	var fail atomic.Bool
	fail.Store(true)
	p, err := Listen("127.0.0.1:0", func(ctx context.Context) (net.Conn, error) {
		if fail.Load() {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: net.UnknownNetworkError("tunnel down")}
		}
		return (&net.Dialer{}).DialContext(ctx, "tcp", up)
	}, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = p.Serve(ctx) }()

	_, err = resolver("tcp", p.Addr()).LookupIPAddr(context.Background(), "api.ocp.lab.local")
	require.Error(t, err, "no upstream, no answer")
	fail.Store(false)
	addrs, err := resolver("udp", p.Addr()).LookupIPAddr(context.Background(), "api.ocp.lab.local")
	require.NoError(t, err)
	assert.Equal(t, "192.0.2.7", addrs[0].IP.String())
}

func TestListenNamesTheAddress(t *testing.T) {
	t.Parallel()
	_, err := Listen("256.0.0.1:53", nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "listen for DNS on udp 256.0.0.1:53")
}

// With any port asked for, a TCP port another program holds makes
// listenPair take another UDP port, closing the first; with a port given,
// it says which address was taken.
func TestListenPairTriesAnotherPort(t *testing.T) {
	t.Parallel()
	var udps []net.PacketConn
	listenUDP := func(network, address string) (net.PacketConn, error) {
		c, err := net.ListenPacket(network, address)
		if err == nil {
			udps = append(udps, c)
		}
		return c, err
	}
	busy := 2
	listenTCP := func(network, address string) (net.Listener, error) {
		if busy > 0 {
			busy--
			return nil, &net.OpError{Op: "listen", Net: network, Err: os.NewSyscallError("bind", syscall.EADDRINUSE)}
		}
		return net.Listen(network, address)
	}
	udp, tcp, err := listenPair("127.0.0.1:0", listenUDP, listenTCP)
	require.NoError(t, err)
	defer udp.Close()
	defer tcp.Close()
	// Two ports are taken by the fake; the kernel's third pick may be held
	// on TCP by another program too (it was, with tests side by side), and
	// then listenPair rightly goes on to a fourth.
	require.GreaterOrEqual(t, len(udps), 3, "two ports taken on TCP, then one free")
	assert.Equal(t, udps[len(udps)-1].LocalAddr().String(), udp.LocalAddr().String(), "the last UDP port tried is the one kept")
	assert.Equal(t, udp.LocalAddr().String(), tcp.Addr().String())
	for _, c := range udps[:len(udps)-1] {
		_, werr := c.WriteTo([]byte("x"), udp.LocalAddr())
		assert.Error(t, werr, "the UDP listener of a port given up is closed")
	}

	free, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := free.LocalAddr().String()
	require.NoError(t, free.Close())
	busy = 1
	_, _, err = listenPair(addr, listenUDP, listenTCP)
	require.Error(t, err, "a port asked for is not swapped for another")
	assert.Contains(t, err.Error(), "listen for DNS on tcp "+addr)
}
