// Package dnstest answers DNS questions over a stream, as a test's
// stand-in for the lab's dnsmasq reached over TCP.
package dnstest

import (
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// Serve answers the questions on c (DNS's TCP framing: a two-byte length,
// then the message), one question a message, until c fails, then closes
// it. answer gives the addresses of name for an A question, or the names
// for a PTR question (name has no trailing dot); none is an empty answer.
func Serve(c net.Conn, answer func(name string, t dnsmessage.Type) []string) {
	defer c.Close()
	for {
		var n uint16
		if binary.Read(c, binary.BigEndian, &n) != nil {
			return
		}
		q := make([]byte, n)
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(q)
		if err != nil {
			return
		}
		qs, err := p.AllQuestions()
		if err != nil || len(qs) != 1 {
			return
		}
		resp := dnsmessage.Message{Header: dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true}, Questions: qs}
		hdr := dnsmessage.ResourceHeader{Name: qs[0].Name, Type: qs[0].Type, Class: dnsmessage.ClassINET, TTL: 60}
		for _, v := range answer(strings.TrimSuffix(qs[0].Name.String(), "."), qs[0].Type) {
			switch qs[0].Type {
			case dnsmessage.TypeA:
				resp.Answers = append(resp.Answers, dnsmessage.Resource{Header: hdr, Body: &dnsmessage.AResource{A: netip.MustParseAddr(v).As4()}})
			case dnsmessage.TypePTR:
				resp.Answers = append(resp.Answers, dnsmessage.Resource{Header: hdr, Body: &dnsmessage.PTRResource{PTR: dnsmessage.MustNewName(v + ".")}})
			}
		}
		b, err := resp.Pack()
		if err != nil {
			return
		}
		if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(b))), b...)); err != nil {
			return
		}
	}
}
