package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bootlab/bootlab/internal/wire"
)

// A node serves ingress when its config says the load balancer routes
// ingress to it, whatever its role: the masters of a lab without workers
// list it next to their API and MCS.
func TestServeChecks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		self wire.NodeExpect
		want []string
	}{
		{wire.NodeExpect{Role: wire.RoleBootstrap}, []string{"serve mcs :22623", "serve api :6443"}},
		{wire.NodeExpect{Role: wire.RoleMaster}, []string{"serve api :6443", "serve mcs :22623"}},
		{wire.NodeExpect{Role: wire.RoleMaster, Ingress: true}, []string{"serve api :6443", "serve mcs :22623", "serve ingress :80", "serve ingress :443"}},
		{wire.NodeExpect{Role: wire.RoleWorker, Ingress: true}, []string{"serve ingress :80", "serve ingress :443"}},
		{wire.NodeExpect{Role: wire.RoleWorker}, nil},
	} {
		assert.Equal(t, tc.want, serveChecks(tc.self), "%s ingress=%t", tc.self.Role, tc.self.Ingress)
	}
}
