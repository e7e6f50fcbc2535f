// Package dnsproxy forwards DNS queries that arrive on this machine, over
// UDP or TCP, to one DNS server reached by a dial function, always over
// TCP. It lets a workstation resolve a remote lab's names: the lab's
// dnsmasq listens on a bridge of the hypervisor's machine, which only the
// SSH connection to that machine reaches, and SSH carries TCP, not UDP.
package dnsproxy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"
)

// Dial opens a TCP connection to the upstream DNS server.
type Dial func(ctx context.Context) (net.Conn, error)

// queryTimeout bounds one forwarded query: a resolver retries sooner.
const queryTimeout = 10 * time.Second

// Proxy listens on one address for UDP and TCP DNS.
type Proxy struct {
	udp  net.PacketConn
	tcp  net.Listener
	dial Dial
	log  *slog.Logger
}

// Listen binds addr (host:port) for UDP and TCP; the port may be 0 for
// any free one (both listeners then share the port UDP got).
func Listen(addr string, dial Dial, log *slog.Logger) (*Proxy, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	udp, tcp, err := listenPair(addr, net.ListenPacket, net.Listen)
	if err != nil {
		return nil, err
	}
	return &Proxy{udp: udp, tcp: tcp, dial: dial, log: log}, nil
}

// pairTries is how many UDP ports listenPair tries when any will do.
const pairTries = 20

// listenPair listens on UDP at addr, then on TCP at the same address and
// port. With port 0 the UDP port is the kernel's pick, and another
// program may hold that number on TCP: then it tries another, up to
// pairTries times (seen under `make test -p 2`: a test of another package
// held the TCP port).
func listenPair(addr string, listenUDP func(network, address string) (net.PacketConn, error),
	listenTCP func(network, address string) (net.Listener, error)) (net.PacketConn, net.Listener, error) {
	tries := 1
	if _, port, err := net.SplitHostPort(addr); err == nil && port == "0" {
		tries = pairTries
	}
	for i := 1; ; i++ {
		udp, err := listenUDP("udp", addr)
		if err != nil {
			return nil, nil, fmt.Errorf("listen for DNS on udp %s: %w", addr, err)
		}
		tcp, err := listenTCP("tcp", udp.LocalAddr().String())
		if err == nil {
			return udp, tcp, nil
		}
		udp.Close()
		if i >= tries || !errors.Is(err, syscall.EADDRINUSE) {
			return nil, nil, fmt.Errorf("listen for DNS on tcp %s: %w", udp.LocalAddr(), err)
		}
	}
}

// Addr is the address the proxy listens on (UDP and TCP).
func (p *Proxy) Addr() string { return p.udp.LocalAddr().String() }

// Serve answers queries until ctx ends, then closes the listeners.
func (p *Proxy) Serve(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.serveUDP(ctx) }()
	go func() { defer wg.Done(); p.serveTCP(ctx) }()
	<-ctx.Done()
	p.udp.Close()
	p.tcp.Close()
	wg.Wait()
	return nil
}

func (p *Proxy) serveUDP(ctx context.Context) {
	buf := make([]byte, 65535)
	for {
		n, from, err := p.udp.ReadFrom(buf)
		if err != nil {
			return // closed by Serve
		}
		query := append([]byte(nil), buf[:n]...)
		go func() {
			answer, err := p.forward(ctx, query)
			if err != nil {
				p.log.Warn("DNS query not forwarded", "from", from.String(), "err", err)
				return
			}
			if _, err := p.udp.WriteTo(answer, from); err != nil {
				p.log.Debug("DNS answer not sent", "to", from.String(), "err", err)
			}
		}()
	}
}

// forward sends one DNS message upstream over TCP (RFC 1035 4.2.2: a
// two-byte length, then the message) and returns the answer.
func (p *Proxy) forward(ctx context.Context, query []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	c, err := p.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	}
	msg := make([]byte, 2+len(query))
	binary.BigEndian.PutUint16(msg, uint16(len(query)))
	copy(msg[2:], query)
	if _, err := c.Write(msg); err != nil {
		return nil, fmt.Errorf("send query: %w", err)
	}
	var size [2]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	answer := make([]byte, binary.BigEndian.Uint16(size[:]))
	if _, err := io.ReadFull(c, answer); err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	return answer, nil
}

// serveTCP passes each TCP client's stream through to a TCP connection
// upstream: DNS over TCP is framed the same on both sides.
func (p *Proxy) serveTCP(ctx context.Context) {
	for {
		c, err := p.tcp.Accept()
		if err != nil {
			return // closed by Serve
		}
		go func() {
			defer c.Close()
			up, err := p.dial(ctx)
			if err != nil {
				p.log.Warn("DNS connection not forwarded", "from", c.RemoteAddr().String(), "err", err)
				return
			}
			defer up.Close()
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				_, err := io.Copy(dst, src)
				if err != nil && !errors.Is(err, net.ErrClosed) {
					p.log.Debug("DNS stream ended", "err", err)
				}
				done <- struct{}{}
			}
			go pipe(up, c)
			go pipe(c, up)
			select {
			case <-done:
			case <-ctx.Done():
			}
		}()
	}
}
