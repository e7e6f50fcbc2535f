package shims

import (
	"bytes"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each power command line asks PID 1 for its action by systemd's signal;
// what the stand-in does not play is refused, saying what it plays.
func TestPowerCommandsAskInitBySignal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want Power
		sig  syscall.Signal
	}{
		{"reboot", nil, Reboot, 39},
		{"systemctl", []string{"reboot"}, Reboot, 39},
		{"systemctl", []string{"--no-block", "poweroff"}, PowerOff, 38},
		{"shutdown", []string{"-r", "now"}, Reboot, 39},
		{"shutdown", []string{"now"}, PowerOff, 38},
		{"shutdown", []string{"-H", "+0"}, Halt, 37},
		{"poweroff", nil, PowerOff, 38},
		{"halt", []string{"-f"}, Halt, 37},
	} {
		p, msg := parsePower(tc.name, tc.args)
		require.Empty(t, msg, "%s %v", tc.name, tc.args)
		assert.Equal(t, tc.want, p, "%s %v", tc.name, tc.args)
		var sent []syscall.Signal
		var stderr bytes.Buffer
		code := powerMain(tc.name, tc.args, &bytes.Buffer{}, &stderr, func(s syscall.Signal) error { sent = append(sent, s); return nil })
		if os.Geteuid() != 0 {
			assert.Equal(t, 1, code)
			assert.Contains(t, stderr.String(), "must be root")
			continue
		}
		assert.Equal(t, 0, code, stderr.String())
		assert.Equal(t, []syscall.Signal{tc.sig}, sent, "%s %v", tc.name, tc.args)
		assert.Contains(t, stderr.String(), "bootlab rehearsal stand-in")
	}
}

func TestPowerCommandsRefuseWhatTheyDoNotPlay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		says string
	}{
		{"systemctl", []string{"start", "bootkube.service"}, "only `systemctl reboot`"},
		{"systemctl", nil, "only `systemctl reboot`"},
		{"shutdown", []string{"-r", "+5"}, `only ` + "`now`" + ` is supported, not "+5"`},
		{"shutdown", []string{"-c"}, "option -c is not supported"},
		{"reboot", []string{"--firmware-setup"}, "--firmware-setup is not supported"},
	} {
		var stderr bytes.Buffer
		called := false
		code := powerMain(tc.name, tc.args, &bytes.Buffer{}, &stderr, func(syscall.Signal) error { called = true; return nil })
		assert.Equal(t, 1, code, "%s %v", tc.name, tc.args)
		assert.False(t, called, "%s %v", tc.name, tc.args)
		assert.Contains(t, stderr.String(), tc.says)
	}
}
