package spec

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClassifyURI(t *testing.T) {
	t.Parallel()
	for uri, want := range map[string]URIKind{
		"qemu:///system":              URILocalSystem,
		"qemu+unix:///system":         URILocalSystem,
		"qemu:///session":             URILocalSession,
		"qemu+ssh://root@host/system": URIRemoteSSH,
		"qemu+ssh:///system":          URIRemoteSSH,
		"qemu+tcp://10.0.0.1/system":  URIRemoteLibvirtOnly,
		"qemu+tls://h/system":         URIRemoteLibvirtOnly,
		"test:///default":             URITest,
		"test+ssh://root@h/default":   URIRemoteSSH,
		"qemu://%zz":                  URIInvalid,
	} {
		assert.Equal(t, want, ClassifyURI(uri), uri)
		assert.Equal(t, want == URIRemoteSSH || want == URIRemoteLibvirtOnly || want == URIInvalid, want.Remote(), uri)
	}
	assert.Equal(t, "qemu", URIDriver("qemu+ssh://h/system"))
	assert.Equal(t, "ssh", URITransport("qemu+ssh://h/system"))
	assert.Equal(t, "", URITransport("qemu:///system"))
}
