package sshc

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
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
// The file (and its directory) is created private if missing and re-read on
// every check, so concurrent clients in one process see each other's
// records.
func TrustOnFirstUse(path string, log *slog.Logger) (ssh.HostKeyCallback, error) {
	if path == "" {
		return nil, errors.New("ssh: no known_hosts file given")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	f.Close()
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		knownHostsMu.Lock()
		defer knownHostsMu.Unlock()
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
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("record host key in %s: %w", path, err)
		}
		defer f.Close()
		if _, err := fmt.Fprintln(f, line); err != nil {
			return fmt.Errorf("record host key in %s: %w", path, err)
		}
		log.Info("trusting the host key on first use", "host", hostname, "fingerprint", ssh.FingerprintSHA256(key), "known_hosts", path)
		return nil
	}, nil
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
