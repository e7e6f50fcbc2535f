package kubetest

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FreePort never hands out a port twice in one test binary, even when the
// kernel offers one again (a control plane's etcd once got the same port
// for its peer and client URLs).
func TestFreePortNeverTwice(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 300 {
		p := FreePort(t)
		n, err := strconv.Atoi(p)
		require.NoError(t, err)
		assert.Positive(t, n)
		assert.False(t, seen[p], "port %s handed out twice", p)
		seen[p] = true
	}
}
