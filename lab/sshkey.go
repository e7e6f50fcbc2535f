package lab

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
)

// EnsureSSHKey creates the lab's SSH key pair (ed25519; private key 0600 at
// s.SSHKeyPath(), public key beside it with .pub) unless it exists. Preparers
// put the public key into Ignition; `lab ssh` logs in with the private one.
func EnsureSSHKey(s *Spec) error {
	priv := s.SSHKeyPath()
	pub := priv + ".pub"
	if _, err := os.Stat(priv); err == nil {
		if _, err := os.Stat(pub); err == nil {
			return nil
		}
		// Public half lost: derive it again from the private key.
		data, err := os.ReadFile(priv)
		if err != nil {
			return fmt.Errorf("read lab SSH key: %w", err)
		}
		signer, err := ssh.ParsePrivateKey(data)
		if err != nil {
			return fmt.Errorf("parse lab SSH key %s: %w (delete it to have a new one made)", priv, err)
		}
		return writePublicKey(pub, signer.PublicKey(), s.Name)
	}
	// The lab directory itself stays traversable (qemu reads Ignition and
	// console files below it); only the key directory is private.
	if err := os.MkdirAll(s.LabDir, 0o755); err != nil {
		return fmt.Errorf("create lab directory %s (labDir): %w", s.LabDir, err)
	}
	if err := os.MkdirAll(filepath.Dir(priv), 0o700); err != nil {
		return fmt.Errorf("create lab SSH key directory: %w", err)
	}
	pk, sk, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("generate lab SSH key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(sk, "bootlab lab "+s.Name)
	if err != nil {
		return fmt.Errorf("encode lab SSH key: %w", err)
	}
	sshPub, err := ssh.NewPublicKey(pk)
	if err != nil {
		return fmt.Errorf("encode lab SSH public key: %w", err)
	}
	tmp := priv + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(block), 0o600); err != nil {
		return fmt.Errorf("write lab SSH key: %w", err)
	}
	if err := writePublicKey(pub, sshPub, s.Name); err != nil {
		return err
	}
	if err := os.Rename(tmp, priv); err != nil {
		return fmt.Errorf("write lab SSH key: %w", err)
	}
	return nil
}

func writePublicKey(path string, k ssh.PublicKey, lab string) error {
	line := append(ssh.MarshalAuthorizedKey(k)[:len(ssh.MarshalAuthorizedKey(k))-1], []byte(" bootlab-"+lab+"\n")...)
	if err := os.WriteFile(path, line, 0o644); err != nil {
		return fmt.Errorf("write lab SSH public key: %w", err)
	}
	return nil
}

// SSHPublicKey returns the lab's public key line (authorized_keys format).
func SSHPublicKey(s *Spec) (string, error) {
	b, err := os.ReadFile(s.SSHKeyPath() + ".pub")
	if err != nil {
		return "", fmt.Errorf("read lab SSH public key: %w (run `bootlab lab up` to create it)", err)
	}
	return string(b), nil
}

// CheckSSHPublicKey checks the keys of a .pub or authorized_keys text the
// way openshift-install checks install-config sshKey (installer pkg/validate
// SSHPublicKey parses it with x/crypto/ssh, so the types are those it knows:
// ssh-ed25519, ecdsa-sha2-nistp256/384/521, ssh-rsa, their sk- (FIDO) forms
// and ssh-dss). DSA passes the installer, but RHCOS's OpenSSH refuses DSA
// logins: bootlab refuses it here.
func CheckSSHPublicKey(text string) error {
	keys := 0
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil {
			return fmt.Errorf("is not an OpenSSH public key (\"ssh-ed25519 AAAA... comment\", as ssh-keygen writes it to the .pub file)")
		}
		if key.Type() == "ssh-dss" {
			return fmt.Errorf("holds a DSA (ssh-dss) key, which RHCOS's OpenSSH refuses: use an ssh-ed25519, ecdsa or ssh-rsa key (ssh-keygen -t ed25519)")
		}
		keys++
	}
	if keys == 0 {
		return fmt.Errorf("holds no key: point it at the .pub file ssh-keygen wrote")
	}
	return nil
}

// RehearsalHostKeyPath is the SSH host key of a rehearsal lab's bootstrap
// node (ed25519, 0600). It is made on the host once per lab and handed to
// the node in its Ignition, so the node presents the same host key after
// every reboot and known_hosts stays right.
func (s *Spec) RehearsalHostKeyPath() string {
	return filepath.Join(s.LabDir, "ssh", "bootstrap_host_ed25519_key")
}

// EnsureRehearsalHostKey returns the rehearsal bootstrap's host key (an
// OpenSSH private key in PEM), creating it the first time.
func EnsureRehearsalHostKey(s *Spec) ([]byte, error) {
	p := s.RehearsalHostKeyPath()
	if data, err := os.ReadFile(p); err == nil {
		if _, err := ssh.ParsePrivateKey(data); err != nil {
			return nil, fmt.Errorf("parse rehearsal host key %s: %w (delete it to have a new one made)", p, err)
		}
		return data, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, fmt.Errorf("create lab SSH key directory: %w", err)
	}
	_, sk, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate rehearsal host key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(sk, "bootstrap."+s.Cluster.Domain())
	if err != nil {
		return nil, fmt.Errorf("encode rehearsal host key: %w", err)
	}
	data := pem.EncodeToMemory(block)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return nil, fmt.Errorf("write rehearsal host key: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return nil, fmt.Errorf("write rehearsal host key: %w", err)
	}
	return data, nil
}
