package spec

import (
	"net/url"
	"strings"
)

// URIKind says where the VMs of a libvirt URI run and how bootlab reaches
// that machine. It is the one classification of libvirt.uri: validation,
// preflight, the hypervisor's Host and the libvirt client all ask it.
type URIKind int

const (
	// URILocalSystem is qemu:///system (or qemu+unix:///system): this
	// machine's system daemon.
	URILocalSystem URIKind = iota
	// URILocalSession is qemu:///session: this user's own daemon.
	URILocalSession
	// URIRemoteSSH is qemu+ssh://[user@]host[:port]/system: another
	// machine reached over SSH, which carries libvirt, files and haproxy.
	URIRemoteSSH
	// URIRemoteLibvirtOnly is another machine reached by a transport that
	// carries libvirt and nothing else (qemu+tcp, qemu+tls).
	URIRemoteLibvirtOnly
	// URITest is libvirt's test driver (test:///default): nothing runs.
	URITest
	// URIInvalid does not parse as a URL.
	URIInvalid
)

// Remote says whether the kind names another machine.
func (k URIKind) Remote() bool {
	return k == URIRemoteSSH || k == URIRemoteLibvirtOnly || k == URIInvalid
}

func (k URIKind) String() string {
	switch k {
	case URILocalSystem:
		return "local system"
	case URILocalSession:
		return "local session"
	case URIRemoteSSH:
		return "remote over ssh"
	case URIRemoteLibvirtOnly:
		return "remote, libvirt only"
	case URITest:
		return "test driver"
	}
	return "invalid"
}

// URIDriver is the part of a URI scheme before "+" ("qemu" in qemu+ssh).
func URIDriver(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return ""
	}
	d, _, _ := strings.Cut(u.Scheme, "+")
	return d
}

// URITransport is the part of a URI scheme after "+" ("ssh" in qemu+ssh),
// empty when there is none.
func URITransport(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return ""
	}
	_, t, _ := strings.Cut(u.Scheme, "+")
	return t
}

// ClassifyURI says what kind of libvirt URI uri is. An unparsable URI is
// URIInvalid, which counts as remote: nothing of this machine is assumed.
func ClassifyURI(uri string) URIKind {
	u, err := url.Parse(uri)
	if err != nil {
		return URIInvalid
	}
	driver, transport, _ := strings.Cut(u.Scheme, "+")
	switch {
	// Where before what: test+ssh://h/default is the test driver on another
	// machine, reached over SSH like qemu+ssh (the remote-hypervisor
	// integration tests run it against a real sshd, with no VMs).
	case transport == "ssh":
		return URIRemoteSSH
	case driver == "test":
		return URITest
	case u.Host != "" || (transport != "" && transport != "unix"):
		return URIRemoteLibvirtOnly
	case u.Path == "/session":
		return URILocalSession
	}
	return URILocalSystem
}

// URIKind is the kind of the lab's libvirt URI.
func (s *Spec) URIKind() URIKind { return ClassifyURI(s.Libvirt.URI) }
