package sshc

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/bootlab/bootlab/internal/userfile"
)

// HostKeyMismatchError is a host key that differs from the recorded one.
type HostKeyMismatchError struct {
	Host, KnownHosts string
	Line             int
}

func (e *HostKeyMismatchError) Error() string {
	return fmt.Sprintf("host key of %s differs from the one recorded in %s line %d: refusing to connect. If the host was rebuilt, forget the old key with `ssh-keygen -R %s -f %s` and retry",
		e.Host, e.KnownHosts, e.Line, knownhosts.Normalize(e.Host), e.KnownHosts)
}

// TrustOnFirstUse checks host keys against the known_hosts file at path:
// an unknown host's key is recorded (and logged with its fingerprint), a
// known host with a different key is refused with *HostKeyMismatchError.
// The file is a user's file like any other (internal/userfile): a FIFO,
// a device or a directory is refused at once, never read or written (it
// would hang the connection, deaf to Ctrl-C). It must exist, unless own
// says it is bootlab's own (a lab's ssh/known_hosts): that one is made
// private, with its directory, when missing; bootlab makes no file
// outside its own directories. It is re-read on every check, so
// concurrent clients in one process see each other's records.
func TrustOnFirstUse(path string, own bool, log *slog.Logger) (ssh.HostKeyCallback, error) {
	if path == "" {
		return nil, errors.New("ssh: no known_hosts file given")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := checkKnownHosts(path, own); err != nil {
		return nil, err
	}
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		knownHostsMu.Lock()
		defer knownHostsMu.Unlock()
		// Checked again: knownhosts.New opens the path as it finds it.
		if err := checkKnownHosts(path, false); err != nil {
			return err
		}
		check, err := knownhosts.New(path)
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		err = check(hostname, remote, key)
		var ke *knownhosts.KeyError
		if !errors.As(err, &ke) {
			return err
		}
		if len(ke.Want) > 0 {
			return &HostKeyMismatchError{Host: hostname, KnownHosts: path, Line: ke.Want[0].Line}
		}
		line := knownhosts.Line([]string{knownhosts.Normalize(hostname)}, key)
		f, err := userfile.OpenAppend(path)
		if err != nil {
			return fmt.Errorf("record host key in known_hosts %w", err)
		}
		defer f.Close()
		if _, err := fmt.Fprintln(f, line); err != nil {
			return fmt.Errorf("record host key in %s: %w", path, err)
		}
		log.Info("trusting the host key on first use", "host", hostname, "fingerprint", ssh.FingerprintSHA256(key), "known_hosts", path)
		return nil
	}, nil
}

// checkKnownHosts makes sure path is a regular file (userfile.Open's
// checks: nothing is waited on), making bootlab's own when missing.
func checkKnownHosts(path string, own bool) error {
	f, _, err := userfile.Open(path)
	if err == nil {
		return f.Close()
	}
	var fe *userfile.Error
	if !errors.As(err, &fe) || !fe.NotExist {
		return fmt.Errorf("known_hosts %w", err)
	}
	if !own {
		return fmt.Errorf("known_hosts %w", &userfile.Error{Path: path, NotExist: true, Err: fe.Err,
			Msg: "not found: bootlab records host keys in a known_hosts file it did not make only when the file exists; create it (touch " + path + ") or name another"})
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("known_hosts: %w", err)
	}
	// O_EXCL: never opened if something appeared there meanwhile.
	nf, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return checkKnownHosts(path, false)
	}
	if err != nil {
		return fmt.Errorf("known_hosts: %w", err)
	}
	return nf.Close()
}

// knownHostsMu serialises the read-check-append of every known_hosts file
// in the process (a lab's nodes are dialled in parallel).
var knownHostsMu sync.Mutex

// DefaultKnownHosts is the user's ~/.ssh/known_hosts: the file OpenSSH,
// and so libvirt's own qemu+ssh transport, checks hypervisor keys against.
func DefaultKnownHosts() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("known_hosts: %w (give ?known_hosts=FILE in libvirt.uri)", err)
	}
	return filepath.Join(home, ".ssh", "known_hosts"), nil
}

// DefaultKeyFiles lists the user's ~/.ssh/id_* private keys that exist, in
// the order OpenSSH tries them.
func DefaultKeyFiles() []string {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	var out []string
	for _, name := range []string{"id_rsa", "id_ecdsa", "id_ed25519", "id_dsa", "identity"} {
		p := filepath.Join(home, ".ssh", name)
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
