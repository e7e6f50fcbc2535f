package stagecmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A node still booting (no route, nothing listening) is waited for, with
// one line said; a refused login fails at once, and the wait is bounded.
func TestDialUntilUp(t *testing.T) {
	t.Parallel()
	noRoute := fmt.Errorf("ssh core@10.0.0.10:22: %w", &net.OpError{Op: "dial", Err: syscall.EHOSTUNREACH})
	refused := fmt.Errorf("ssh core@10.0.0.10:22: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED})
	login := errors.New("ssh: handshake failed: ssh: unable to authenticate")

	tries, said := 0, 0
	n, err := dialUntilUp(context.Background(), func() (int, error) {
		tries++
		switch tries {
		case 1:
			return 0, noRoute
		case 2:
			return 0, refused
		}
		return 7, nil
	}, time.Minute, time.Millisecond, func() { said++ })
	require.NoError(t, err)
	assert.Equal(t, 7, n)
	assert.Equal(t, 3, tries)
	assert.Equal(t, 1, said, "one line, not one a try")

	tries = 0
	_, err = dialUntilUp(context.Background(), func() (int, error) { tries++; return 0, login }, time.Minute, time.Millisecond, func() {})
	assert.Equal(t, login, err)
	assert.Equal(t, 1, tries, "a refused login is not a boot to wait out")

	tries = 0
	_, err = dialUntilUp(context.Background(), func() (int, error) { tries++; return 0, noRoute }, 0, time.Millisecond, func() {})
	assert.ErrorIs(t, err, syscall.EHOSTUNREACH)
	assert.Equal(t, 1, tries, "no wait (--host): one try")

	tries = 0
	_, err = dialUntilUp(context.Background(), func() (int, error) { tries++; return 0, refused }, 20*time.Millisecond, 5*time.Millisecond, func() {})
	assert.ErrorIs(t, err, syscall.ECONNREFUSED, "bounded: the last error once the time is up")
	assert.Less(t, tries, 10)
}
