package preflight

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/lab/spec"
)

// connectFix is the fix line for a libvirt connection that failed with
// err (nil: the daemon did not answer once connected), after its cause: a
// changed host key, a socket= path, an SSH login refused or a host not
// reached, or a daemon that is not running, here or on the hypervisor's
// machine. Every command in it is quoted so that it pastes.
func connectFix(s *spec.Spec, err error) string {
	uri := s.Libvirt.URI
	virsh := "`virsh -c " + sshc.Quote(uri) + " version`"
	u, _ := url.Parse(uri)
	var mm *sshc.HostKeyMismatchError
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	switch {
	case errors.As(err, &mm):
		return fmt.Sprintf("the host key of %s is not the one recorded: if that machine was rebuilt, forget the old key with `ssh-keygen -R %s -f %s`, then run this again; otherwise find out why it changed before you connect",
			mm.Host, sshc.Quote(mm.Host), sshc.Quote(mm.KnownHosts))
	case u != nil && u.Query().Get("socket") != "":
		return fmt.Sprintf("check the socket= path of libvirt.uri (`ls -l %s`), or drop socket= to use the daemon's own; then try %s", sshc.Quote(u.Query().Get("socket")), virsh)
	case spec.ClassifyURI(uri).Remote() && u != nil:
		login := u.Host
		if u.User != nil {
			login = u.User.Username() + "@" + u.Hostname()
		}
		switch {
		case strings.Contains(msg, "unable to authenticate"):
			return fmt.Sprintf("the SSH login to %s was refused: put the lab's key (keyfile= of libvirt.uri, or your agent's) in that user's authorized_keys (`ssh-copy-id %s`), then try %s", login, sshc.Quote(login), virsh)
		case strings.Contains(msg, "connection refused"), strings.Contains(msg, "no route to host"), strings.Contains(msg, "i/o timeout"), strings.Contains(msg, "no such host"):
			return fmt.Sprintf("%s cannot be reached over SSH: check its name and port and that sshd runs there (`ssh %s true`)", u.Host, sshc.Quote(login))
		}
		return fmt.Sprintf("start libvirtd on %s (`ssh %s systemctl start libvirtd`), then try %s", u.Hostname(), sshc.Quote(login), virsh)
	}
	return "start the daemons: `systemctl enable --now libvirtd`, or without systemd `virtlogd -d && setsid -f tini -s -- libvirtd` " +
		"(tini reaps the QEMUs libvirtd daemonizes; under a PID 1 that reaps late every VM's stop waits for it; scripts/host/setup.sh does this); " +
		"install them with `apt-get install -y libvirt-daemon-system libvirt-clients qemu-system-x86`; then try " + virsh
}
