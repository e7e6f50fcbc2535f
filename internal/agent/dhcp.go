package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/nclient4"
	"golang.org/x/sys/unix"

	"github.com/bootlab/bootlab/internal/timing"
)

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

// dhcpLease runs DISCOVER/OFFER/REQUEST/ACK on ifname until ctx ends, with
// nclient4 on a raw socket: the interface is up but has no address yet.
func dhcpLease(ctx context.Context, ifname string, mac net.HardwareAddr) (*Lease, error) {
	if err := waitForCRNG(); err != nil {
		return nil, err
	}
	conn, err := nclient4.NewRawUDPConn(ifname, nclient4.ClientPort)
	if err != nil {
		return nil, fmt.Errorf("DHCP socket on %s: %w", ifname, err)
	}
	return leaseOn(ctx, conn, mac)
}

// waitForCRNG blocks until the kernel's random pool is ready. nclient4
// draws each transaction ID with a non-blocking getrandom in a busy loop,
// which on a freshly booted TCG guest spins for minutes (the kernel only
// gathers jitter entropy for a blocking caller) and fails DHCP with "could
// not get random number". One blocking call readies the pool in about a
// second, as the hand-written client's crypto/rand read did.
func waitForCRNG() error {
	var b [4]byte
	for {
		_, err := unix.Getrandom(b[:], 0)
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				return fmt.Errorf("wait for the kernel's random pool: %w", err)
			}
			return nil
		}
	}
}

// leaseOn runs the exchange on conn, to the broadcast address unless opts
// say otherwise. It takes conn over and closes it.
func leaseOn(ctx context.Context, conn net.PacketConn, mac net.HardwareAddr, opts ...nclient4.ClientOpt) (*Lease, error) {
	// Retry fast at first: the first DISCOVER often leaves before the link
	// is up. nclient4 doubles the wait on each try (1 s, 2 s, 4 s); the loop
	// starts over until ctx ends.
	c, err := nclient4.NewWithConn(conn, mac, append([]nclient4.ClientOpt{
		nclient4.WithTimeout(time.Second), nclient4.WithRetry(3)}, opts...)...)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("DHCP client: %w", err)
	}
	defer c.Close()
	mods := []dhcpv4.Modifier{
		// As the hand-written client did: answers by broadcast, whatever
		// the server makes of a client without an address.
		dhcpv4.WithBroadcast(true),
		dhcpv4.WithRequestedOptions(dhcpv4.OptionHostName, dhcpv4.OptionIPAddressLeaseTime),
		dhcpv4.WithOption(dhcpv4.OptClientIdentifier(append([]byte{1}, mac...))),
	}
	var last error
	for ctx.Err() == nil {
		l, err := c.Request(ctx, mods...)
		if err == nil {
			return leaseFromACK(l.ACK), nil
		}
		last = err
		if nak := (*nclient4.ErrNak)(nil); errors.As(err, &nak) {
			last = fmt.Errorf("DHCP NAK from %s: %s", nak.Nak.ServerIdentifier(), nak.Nak.Message())
			// A NAK is an answer: ask again after a pause, not at once.
			timing.Sleep(ctx, time.Second)
		}
	}
	if last == nil {
		last = ctx.Err()
	}
	return nil, fmt.Errorf("no DHCP answer: %w", last)
}

// leaseFromACK reads what the agent uses from the server's ACK.
func leaseFromACK(ack *dhcpv4.DHCPv4) *Lease {
	l := &Lease{
		IP:       addr4(ack.YourIPAddr),
		Mask:     ack.SubnetMask(),
		Hostname: ack.HostName(),
		Domain:   ack.DomainName(),
		Server:   addr4(ack.ServerIdentifier()),
		Lease:    ack.IPAddressLeaseTime(0),
	}
	if l.Mask == nil {
		l.Mask = net.CIDRMask(24, 32)
	}
	if r := ack.Router(); len(r) > 0 {
		l.Router = addr4(r[0])
	}
	for _, d := range ack.DNS() {
		l.DNS = append(l.DNS, addr4(d))
	}
	return l
}

func addr4(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip.To4())
	return a
}
