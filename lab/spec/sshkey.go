package spec

import (
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
)

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
