package libvirt

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bootlab/bootlab/lab/hypervisor"
)

// The URI decides the capabilities here and nowhere else: lab asks them.
func TestCapabilitiesOf(t *testing.T) {
	cases := []struct {
		uri  string
		want hypervisor.Capabilities
	}{
		{uri: "qemu:///system", want: hypervisor.Full()},
		{uri: "qemu:///session", want: hypervisor.Full()},
		{uri: "qemu+ssh://root@lab-host/system", want: hypervisor.Full()},
		{uri: "test:///default", want: hypervisor.Capabilities{}},
		// The test driver over SSH plays a remote qemu hypervisor (the
		// remote integration tests run up and down through it).
		{uri: "test+ssh://root@127.0.0.1:2222/default", want: hypervisor.Full()},
	}
	for _, tc := range cases {
		t.Run(tc.uri, func(t *testing.T) {
			assert.Equal(t, tc.want, CapabilitiesOf(tc.uri))
		})
	}
	assert.False(t, CapabilitiesOf("test:///default").RunsGuests, "the zero value is the test driver's")
}
