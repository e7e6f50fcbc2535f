package preflight

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/lab/spec"
)

// The fix line follows the connection's cause, and what it suggests pastes
// into a shell as it is (a URI with ? or & is quoted).
func TestConnectFixFollowsTheCause(t *testing.T) {
	for _, tc := range []struct {
		name, uri string
		err       error
		want      string
	}{
		{"local daemon down", "qemu:///system", errors.New("dial unix /var/run/libvirt/libvirt-sock: connect: no such file or directory"),
			"start the daemons: `systemctl enable --now libvirtd`"},
		{"bad socket", "qemu+unix:///system?socket=/tmp/no sock", errors.New("dial unix: no such file"),
			"check the socket= path of libvirt.uri (`ls -l '/tmp/no sock'`), or drop socket= to use the daemon's own; then try `virsh -c 'qemu+unix:///system?socket=/tmp/no sock' version`"},
		{"host key changed", "qemu+ssh://root@rack2/system", &sshc.HostKeyMismatchError{Host: "rack2:22", KnownHosts: "/root/.ssh/known_hosts", Line: 3},
			"forget the old key with `ssh-keygen -R rack2:22 -f /root/.ssh/known_hosts`"},
		{"login refused", "qemu+ssh://root@rack2/system?keyfile=/k", errors.New("ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey]"),
			"the SSH login to root@rack2 was refused: put the lab's key (keyfile= of libvirt.uri, or your agent's) in that user's authorized_keys (`ssh-copy-id root@rack2`), then try `virsh -c 'qemu+ssh://root@rack2/system?keyfile=/k' version`"},
		{"host not reached", "qemu+ssh://root@rack2:2222/system", errors.New("dial tcp 10.0.0.2:2222: connect: connection refused"),
			"rack2:2222 cannot be reached over SSH: check its name and port and that sshd runs there (`ssh root@rack2 true`)"},
		{"remote daemon down", "qemu+ssh://root@rack2/system", errors.New("connect to libvirt through rack2 (socket /var/run/libvirt/libvirt-sock there): EOF"),
			"start libvirtd on rack2 (`ssh root@rack2 systemctl start libvirtd`), then try `virsh -c qemu+ssh://root@rack2/system version`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &spec.Spec{Libvirt: spec.Libvirt{URI: tc.uri}}
			got := connectFix(s, tc.err)
			assert.Contains(t, got, tc.want)
			if tc.name != "local daemon down" {
				assert.NotContains(t, got, "systemctl enable --now libvirtd", "a fix for another cause")
			}
		})
	}
}
