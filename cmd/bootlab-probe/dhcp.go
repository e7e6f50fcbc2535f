package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DHCPv4 message types and options (RFC 2131/2132) this client uses.
const (
	dhcpDiscover = 1
	dhcpOffer    = 2
	dhcpRequest  = 3
	dhcpAck      = 5
	dhcpNak      = 6

	optSubnetMask  = 1
	optRouter      = 3
	optDNS         = 6
	optHostname    = 12
	optDomainName  = 15
	optRequestedIP = 50
	optLeaseTime   = 51
	optMsgType     = 53
	optServerID    = 54
	optParamList   = 55
	optClientID    = 61
	optEnd         = 255
)

var dhcpMagic = []byte{99, 130, 83, 99}

// dhcpMsg is the part of a DHCP message the client reads.
type dhcpMsg struct {
	Op      byte
	XID     uint32
	YourIP  netip.Addr
	CHAddr  net.HardwareAddr
	Options map[byte][]byte
}

func (m dhcpMsg) msgType() byte {
	if v := m.Options[optMsgType]; len(v) == 1 {
		return v[0]
	}
	return 0
}

func (m dhcpMsg) addr(opt byte) netip.Addr {
	if v := m.Options[opt]; len(v) >= 4 {
		a, _ := netip.AddrFromSlice(v[:4])
		return a
	}
	return netip.Addr{}
}

func (m dhcpMsg) addrs(opt byte) []netip.Addr {
	v := m.Options[opt]
	var out []netip.Addr
	for i := 0; i+4 <= len(v); i += 4 {
		a, _ := netip.AddrFromSlice(v[i : i+4])
		out = append(out, a)
	}
	return out
}

// encodeDHCP builds a client message (BOOTREQUEST) with the broadcast flag
// set, so the server answers by broadcast before the client has an address.
func encodeDHCP(msgType byte, xid uint32, mac net.HardwareAddr, requested, server netip.Addr) []byte {
	b := make([]byte, 240)
	b[0], b[1], b[2] = 1, 1, 6
	binary.BigEndian.PutUint32(b[4:], xid)
	binary.BigEndian.PutUint16(b[10:], 0x8000)
	copy(b[28:], mac)
	copy(b[236:], dhcpMagic)
	b = append(b, optMsgType, 1, msgType)
	b = append(b, optClientID, byte(1+len(mac)), 1)
	b = append(b, mac...)
	if requested.IsValid() {
		a := requested.As4()
		b = append(b, optRequestedIP, 4, a[0], a[1], a[2], a[3])
	}
	if server.IsValid() {
		a := server.As4()
		b = append(b, optServerID, 4, a[0], a[1], a[2], a[3])
	}
	b = append(b, optParamList, 6, optSubnetMask, optRouter, optDNS, optHostname, optDomainName, optLeaseTime)
	b = append(b, optEnd)
	for len(b) < 300 { // some servers drop runts
		b = append(b, 0)
	}
	return b
}

func decodeDHCP(b []byte) (dhcpMsg, error) {
	if len(b) < 240 || !bytes.Equal(b[236:240], dhcpMagic) {
		return dhcpMsg{}, errors.New("not a DHCP message")
	}
	m := dhcpMsg{Op: b[0], XID: binary.BigEndian.Uint32(b[4:]), Options: map[byte][]byte{}}
	m.YourIP, _ = netip.AddrFromSlice(b[16:20])
	hlen := int(b[2])
	if hlen > 16 {
		hlen = 16
	}
	m.CHAddr = net.HardwareAddr(append([]byte(nil), b[28:28+hlen]...))
	opts := b[240:]
	for i := 0; i < len(opts); {
		code := opts[i]
		if code == 0 {
			i++
			continue
		}
		if code == optEnd {
			break
		}
		if i+1 >= len(opts) {
			return m, errors.New("truncated DHCP option")
		}
		n := int(opts[i+1])
		if i+2+n > len(opts) {
			return m, errors.New("truncated DHCP option")
		}
		m.Options[code] = append(m.Options[code], opts[i+2:i+2+n]...)
		i += 2 + n
	}
	return m, nil
}

// Lease is what DHCP gave.
type Lease struct {
	IP       netip.Addr
	Mask     net.IPMask
	Router   netip.Addr
	DNS      []netip.Addr
	Hostname string
	Domain   string
	Server   netip.Addr
	Lease    time.Duration
}

// dhcpLease runs DISCOVER/OFFER/REQUEST/ACK on ifname until ctx ends.
func dhcpLease(ctx context.Context, ifname string, mac net.HardwareAddr) (*Lease, error) {
	lc := net.ListenConfig{Control: func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_BROADCAST, 1); serr != nil {
				return
			}
			if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); serr != nil {
				return
			}
			serr = unix.SetsockoptString(int(fd), unix.SOL_SOCKET, unix.SO_BINDTODEVICE, ifname)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	pc, err := lc.ListenPacket(ctx, "udp4", "0.0.0.0:68")
	if err != nil {
		return nil, fmt.Errorf("DHCP socket on %s: %w", ifname, err)
	}
	defer pc.Close()
	bcast := &net.UDPAddr{IP: net.IPv4bcast, Port: 67}
	var last error
	for attempt := 0; ctx.Err() == nil; attempt++ {
		var xb [4]byte
		_, _ = rand.Read(xb[:])
		xid := binary.BigEndian.Uint32(xb[:])
		// Retry fast at first: the first DISCOVER often leaves before the
		// link is up; back off to 4 s per attempt.
		timeout := time.Duration(attempt+1) * time.Second
		if timeout > 4*time.Second {
			timeout = 4 * time.Second
		}
		lease, err := dhcpExchange(ctx, pc, bcast, xid, mac, timeout)
		if err == nil {
			return lease, nil
		}
		last = err
	}
	if last == nil {
		last = ctx.Err()
	}
	return nil, last
}

func dhcpExchange(ctx context.Context, pc net.PacketConn, bcast net.Addr, xid uint32, mac net.HardwareAddr, timeout time.Duration) (*Lease, error) {
	wait := func(want byte) (dhcpMsg, error) {
		deadline := time.Now().Add(timeout)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		_ = pc.SetReadDeadline(deadline)
		buf := make([]byte, 1500)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return dhcpMsg{}, fmt.Errorf("no DHCP answer: %w", err)
			}
			m, err := decodeDHCP(buf[:n])
			if err != nil || m.Op != 2 || m.XID != xid || !bytes.Equal(m.CHAddr, mac) {
				continue
			}
			if m.msgType() == dhcpNak {
				return m, fmt.Errorf("DHCP NAK from %s: %s", m.addr(optServerID), m.Options[56])
			}
			if m.msgType() == want {
				return m, nil
			}
		}
	}
	if _, err := pc.WriteTo(encodeDHCP(dhcpDiscover, xid, mac, netip.Addr{}, netip.Addr{}), bcast); err != nil {
		return nil, fmt.Errorf("send DHCPDISCOVER: %w", err)
	}
	offer, err := wait(dhcpOffer)
	if err != nil {
		return nil, err
	}
	server := offer.addr(optServerID)
	if _, err := pc.WriteTo(encodeDHCP(dhcpRequest, xid, mac, offer.YourIP, server), bcast); err != nil {
		return nil, fmt.Errorf("send DHCPREQUEST: %w", err)
	}
	ack, err := wait(dhcpAck)
	if err != nil {
		return nil, err
	}
	l := &Lease{IP: ack.YourIP, Router: ack.addr(optRouter), DNS: ack.addrs(optDNS),
		Hostname: string(ack.Options[optHostname]), Domain: string(ack.Options[optDomainName]), Server: server}
	if v := ack.Options[optSubnetMask]; len(v) == 4 {
		l.Mask = net.IPMask(v)
	} else {
		l.Mask = net.CIDRMask(24, 32)
	}
	if v := ack.Options[optLeaseTime]; len(v) == 4 {
		l.Lease = time.Duration(binary.BigEndian.Uint32(v)) * time.Second
	}
	return l, nil
}
