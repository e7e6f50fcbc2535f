package main

import (
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDHCPEncodeDecode(t *testing.T) {
	mac, _ := net.ParseMAC("52:54:00:aa:bb:cc")
	req := encodeDHCP(dhcpRequest, 0x01020304, mac, netip.MustParseAddr("192.168.126.11"), netip.MustParseAddr("192.168.126.1"))
	assert.GreaterOrEqual(t, len(req), 300)
	m, err := decodeDHCP(req)
	require.NoError(t, err)
	assert.Equal(t, byte(1), m.Op)
	assert.Equal(t, uint32(0x01020304), m.XID)
	assert.Equal(t, mac, m.CHAddr)
	assert.Equal(t, byte(dhcpRequest), m.msgType())
	assert.Equal(t, netip.MustParseAddr("192.168.126.11"), m.addr(optRequestedIP))
	assert.Equal(t, netip.MustParseAddr("192.168.126.1"), m.addr(optServerID))
	assert.Equal(t, byte(0x80), req[10], "broadcast flag")

	// an ACK as a server writes it
	ack := make([]byte, 240)
	ack[0], ack[2] = 2, 6
	copy(ack[4:], []byte{1, 2, 3, 4})
	copy(ack[16:], []byte{192, 168, 126, 11})
	copy(ack[28:], mac)
	copy(ack[236:], dhcpMagic)
	ack = append(ack, optMsgType, 1, dhcpAck, 0, optDNS, 8, 192, 168, 126, 1, 10, 0, 0, 1,
		optHostname, 8, 'm', 'a', 's', 't', 'e', 'r', '-', '0', optEnd)
	m, err = decodeDHCP(ack)
	require.NoError(t, err)
	assert.Equal(t, byte(dhcpAck), m.msgType())
	assert.Equal(t, netip.MustParseAddr("192.168.126.11"), m.YourIP)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("192.168.126.1"), netip.MustParseAddr("10.0.0.1")}, m.addrs(optDNS))
	assert.Equal(t, "master-0", string(m.Options[optHostname]))

	_, err = decodeDHCP(ack[:100])
	assert.Error(t, err)
	_, err = decodeDHCP(append(ack[:240:240], optHostname, 9, 'x'))
	assert.Error(t, err)
}
