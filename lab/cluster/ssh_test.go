package cluster

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/bootlab/bootlab/internal/node"
	"github.com/bootlab/bootlab/internal/sshc"
)

// sshStandIn is an in-process SSH server (golang.org/x/crypto/ssh) that
// accepts one client key and answers exec requests: "false" fails, "hang"
// never answers, anything else prints "ran: <command>".
func sshStandIn(t *testing.T, clientKey ssh.PublicKey) (addr string, hostKey ssh.Signer) {
	t.Helper()
	_, hk, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	hostKey, err = ssh.NewSignerFromKey(hk)
	require.NoError(t, err)
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(c ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if c.User() == "core" && bytes.Equal(k.Marshal(), clientKey.Marshal()) {
			return nil, nil
		}
		return nil, assert.AnError
	}}
	cfg.AddHostKey(hostKey)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_, chans, reqs, err := ssh.NewServerConn(conn, cfg)
				if err != nil {
					return
				}
				go ssh.DiscardRequests(reqs)
				for nc := range chans {
					ch, creqs, err := nc.Accept()
					if err != nil {
						continue
					}
					go func() {
						defer ch.Close()
						for r := range creqs {
							if r.Type != "exec" {
								r.Reply(false, nil)
								continue
							}
							// bootlab's SSH client runs every command as
							// bash -c 'COMMAND'.
							cmd, ok := strings.CutPrefix(string(r.Payload[4:]), "bash -c ")
							if !ok {
								r.Reply(false, nil)
								continue
							}
							if len(cmd) > 1 && cmd[0] == '\'' {
								cmd = strings.ReplaceAll(cmd[1:len(cmd)-1], `'\''`, "'")
							}
							r.Reply(true, nil)
							if cmd == "hang" {
								// A node that stopped answering: no output, no
								// exit, until the client goes away.
								continue
							}
							status := uint32(0)
							if cmd == "false" {
								ch.Stderr().Write([]byte("it failed"))
								status = 1
							} else {
								ch.Write([]byte("ran: " + cmd))
							}
							b := make([]byte, 4)
							binary.BigEndian.PutUint32(b, status)
							ch.SendRequest("exit-status", false, b)
							return
						}
					}()
				}
			}()
		}
	}()
	return ln.Addr().String(), hostKey
}

func labKey(t *testing.T) (string, ssh.PublicKey) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(priv, "")
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "id_ed25519")
	require.NoError(t, os.WriteFile(p, pem.EncodeToMemory(block), 0o600))
	sp, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	return p, sp
}

// redialing is how lab wait reaches the bootstrap (BootstrapSSH): as
// core, without sudo, dialled on demand.
func redialing(t *testing.T, addr, keyPath, known string) *node.Redialing {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	return node.NewRedialing(node.SSHConfig{Host: host, Port: p, User: "core", KeyPath: keyPath, KnownHostsPath: known, OwnKnownHosts: true, AsUser: true})
}

func runOut(n node.Node, cmd string) (string, error) {
	out, err := node.Output(context.Background(), n, cmd)
	return string(out), err
}

func TestBootstrapSSHTrustOnFirstUse(t *testing.T) {
	t.Parallel()
	keyPath, pub := labKey(t)
	addr, _ := sshStandIn(t, pub)
	known := filepath.Join(t.TempDir(), "ssh", "known_hosts")
	r := redialing(t, addr, keyPath, known)
	defer r.Close()
	out, err := runOut(r, "ls /opt/openshift")
	require.NoError(t, err)
	assert.Equal(t, "ran: ls /opt/openshift", out)
	data, err := os.ReadFile(known)
	require.NoError(t, err)
	assert.Contains(t, string(data), "ssh-ed25519 ", "the host key was recorded")

	_, err = runOut(r, "false")
	assert.ErrorContains(t, err, "it failed")

	// Another server on the same address would have another key: refused.
	r.Close()
	_, other := sshStandIn(t, pub)
	otherLine := knownhosts.Line([]string{knownhosts.Normalize(addr)}, other.PublicKey())
	require.NoError(t, os.WriteFile(known, []byte(otherLine+"\n"), 0o600))
	_, err = runOut(r, "ls")
	var mm *sshc.HostKeyMismatchError
	require.ErrorAs(t, err, &mm, "a changed host key is refused")
	assert.Equal(t, known, mm.KnownHosts)
}

func TestBootstrapSSHWrongKeyRefused(t *testing.T) {
	t.Parallel()
	keyPath, _ := labKey(t)
	_, otherPub := labKey(t)
	addr, _ := sshStandIn(t, otherPub)
	r := redialing(t, addr, keyPath, filepath.Join(t.TempDir(), "kh"))
	_, err := runOut(r, "true")
	assert.Error(t, err)
}

// A command that never answers ends with its context, and the connection,
// which may be dead, is dropped: the next command dials again.
func TestBootstrapSSHHungCommandEndsWithContext(t *testing.T) {
	t.Parallel()
	keyPath, pub := labKey(t)
	addr, _ := sshStandIn(t, pub)
	r := redialing(t, addr, keyPath, filepath.Join(t.TempDir(), "kh"))
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := node.Output(ctx, r, "hang")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, r.Connected(), "the connection was dropped")
	out, err := runOut(r, "echo again")
	require.NoError(t, err)
	assert.Equal(t, "ran: echo again", out)
}
