package agent

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/nclient4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeDHCP answers DHCP on a loopback UDP socket as libvirt's dnsmasq does
// for a node: an OFFER, then an ACK (or a NAK when nak is set).
func fakeDHCP(t *testing.T, nak bool) (*net.UDPAddr, <-chan *dhcpv4.DHCPv4) {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	seen := make(chan *dhcpv4.DHCPv4, 16)
	server := net.IPv4(192, 168, 126, 1)
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			req, err := dhcpv4.FromBytes(buf[:n])
			if err != nil {
				continue
			}
			seen <- req
			typ := dhcpv4.MessageTypeOffer
			if req.MessageType() == dhcpv4.MessageTypeRequest {
				typ = dhcpv4.MessageTypeAck
				if nak {
					typ = dhcpv4.MessageTypeNak
				}
			}
			reply, err := dhcpv4.NewReplyFromRequest(req,
				dhcpv4.WithMessageType(typ),
				dhcpv4.WithServerIP(server),
				dhcpv4.WithOption(dhcpv4.OptServerIdentifier(server)),
				dhcpv4.WithYourIP(net.IPv4(192, 168, 126, 11)),
				dhcpv4.WithNetmask(net.CIDRMask(24, 32)),
				dhcpv4.WithRouter(server),
				dhcpv4.WithDNS(server, net.IPv4(10, 0, 0, 1)),
				dhcpv4.WithOption(dhcpv4.OptHostName("master-0")),
				dhcpv4.WithOption(dhcpv4.OptDomainName("ux1.example.com")),
				dhcpv4.WithLeaseTime(3600),
			)
			if err != nil {
				continue
			}
			if nak && typ == dhcpv4.MessageTypeNak {
				reply.UpdateOption(dhcpv4.OptMessage("address in use"))
			}
			_, _ = pc.WriteTo(reply.ToBytes(), from)
		}
	}()
	return pc.LocalAddr().(*net.UDPAddr), seen
}

func clientConn(t *testing.T) net.PacketConn {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	return pc
}

func TestDHCPLease(t *testing.T) {
	t.Parallel()
	mac, _ := net.ParseMAC("52:54:00:aa:bb:cc")
	srv, seen := fakeDHCP(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := leaseOn(ctx, clientConn(t), mac, nclient4.WithServerAddr(srv))
	require.NoError(t, err)
	assert.Equal(t, &Lease{
		IP:       netip.MustParseAddr("192.168.126.11"),
		Mask:     net.CIDRMask(24, 32),
		Router:   netip.MustParseAddr("192.168.126.1"),
		DNS:      []netip.Addr{netip.MustParseAddr("192.168.126.1"), netip.MustParseAddr("10.0.0.1")},
		Hostname: "master-0",
		Domain:   "ux1.example.com",
		Server:   netip.MustParseAddr("192.168.126.1"),
		Lease:    time.Hour,
	}, l)

	discover, request := <-seen, <-seen
	assert.Equal(t, dhcpv4.MessageTypeDiscover, discover.MessageType())
	assert.Equal(t, dhcpv4.MessageTypeRequest, request.MessageType())
	for _, m := range []*dhcpv4.DHCPv4{discover, request} {
		assert.Equal(t, mac, m.ClientHWAddr)
		assert.True(t, m.IsBroadcast(), "the server must broadcast: the client has no address yet")
		assert.Equal(t, append([]byte{1}, mac...), m.GetOneOption(dhcpv4.OptionClientIdentifier))
		for _, o := range []dhcpv4.OptionCode{dhcpv4.OptionSubnetMask, dhcpv4.OptionRouter, dhcpv4.OptionDomainNameServer,
			dhcpv4.OptionHostName, dhcpv4.OptionDomainName, dhcpv4.OptionIPAddressLeaseTime} {
			assert.True(t, m.IsOptionRequested(o), "%s requested", o)
		}
	}
	assert.Equal(t, net.IPv4(192, 168, 126, 11).To4(), request.RequestedIPAddress().To4())
	assert.Equal(t, net.IPv4(192, 168, 126, 1).To4(), request.ServerIdentifier().To4())
}

func TestDHCPNakAndSilence(t *testing.T) {
	t.Parallel()
	mac, _ := net.ParseMAC("52:54:00:aa:bb:cc")
	srv, _ := fakeDHCP(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err := leaseOn(ctx, clientConn(t), mac, nclient4.WithServerAddr(srv))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "DHCP NAK from 192.168.126.1: address in use")

	silent := clientConn(t) // a server that never answers
	ctx, cancel = context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err = leaseOn(ctx, clientConn(t), mac, nclient4.WithServerAddr(silent.LocalAddr().(*net.UDPAddr)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no DHCP answer")
	assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded, "it kept asking until ctx ended")
}
