package engine

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bootlab/bootlab/internal/atomicfile"
	"github.com/bootlab/bootlab/lab/spec"

	"golang.org/x/crypto/ssh"

	"github.com/bootlab/bootlab/lab/labdir"
)

// EnsureSSHKey creates the lab's SSH key pair (ed25519; private key 0600 at
// labdir.SSHKey(s), public key beside it with .pub) unless it exists. Preparers
// put the public key into Ignition; `lab ssh` logs in with the private one.
func EnsureSSHKey(s *spec.Spec) error {
	priv := labdir.SSHKey(s)
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
	// The public key first: the private key's presence says the pair is
	// whole.
	if err := writePublicKey(pub, sshPub, s.Name); err != nil {
		return err
	}
	if err := atomicfile.Write(priv, pem.EncodeToMemory(block), 0o600); err != nil {
		return fmt.Errorf("lab SSH key: %w", err)
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
func SSHPublicKey(s *spec.Spec) (string, error) {
	b, err := os.ReadFile(labdir.SSHKey(s) + ".pub")
	if err != nil {
		return "", fmt.Errorf("read lab SSH public key: %w (run `bootlab lab up` to create it)", err)
	}
	return string(b), nil
}

// EnsureRehearsalHostKey returns the rehearsal bootstrap's host key (an
// OpenSSH private key in PEM), creating it the first time.
func EnsureRehearsalHostKey(s *spec.Spec) ([]byte, error) {
	p := labdir.RehearsalHostKey(s)
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
	if err := atomicfile.Write(p, data, 0o600); err != nil {
		return nil, fmt.Errorf("rehearsal host key: %w", err)
	}
	return data, nil
}
