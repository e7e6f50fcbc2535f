package sshc_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/internal/sshc/sshctest"
)

func dial(t *testing.T, srv *sshctest.Server, kh string) *sshc.Client {
	t.Helper()
	c, err := sshc.Dial(context.Background(), sshc.Config{Host: srv.Host, Port: srv.Port, User: "root", KeyFiles: []string{srv.KeyFile}, KnownHosts: kh, OwnKnownHosts: true})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRunAndStream(t *testing.T) {
	t.Parallel()
	srv := sshctest.Start(t)
	c := dial(t, srv, filepath.Join(t.TempDir(), "known_hosts"))
	ctx := context.Background()

	var out, errb strings.Builder
	code, err := c.Stream(ctx, `read -r line; echo "out $line"; echo 'it''s err' >&2; exit 3`, strings.NewReader("hello\n"), &out, &errb)
	require.NoError(t, err)
	assert.Equal(t, 3, code)
	assert.Equal(t, "out hello\n", out.String())
	assert.Equal(t, "its err\n", errb.String())
	// Commands go through bash on the host, whatever the login shell.
	assert.True(t, strings.HasPrefix(srv.Commands()[0], "bash -c '"), srv.Commands()[0])

	r, err := c.Run(ctx, "echo $BASH_VERSION >/dev/null; printf a; printf b >&2; exit 0")
	require.NoError(t, err)
	assert.Equal(t, sshc.Result{Stdout: []byte("a"), Stderr: []byte("b"), ExitCode: 0}, r)
	assert.NoError(t, r.Err("x"))

	r, err = c.Run(ctx, "echo first >&2; echo 'no such thing' >&2; exit 7")
	require.NoError(t, err)
	assert.EqualError(t, r.Err("frob"), "frob: exit status 7: no such thing")
}

func TestSudoOnlyForNonRoot(t *testing.T) {
	t.Parallel()
	srv := sshctest.Start(t)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	ctx := context.Background()
	for _, tc := range []struct {
		user, prefix string
	}{{"root", "bash -c "}, {"core", "sudo -n bash -c "}} {
		c, err := sshc.Dial(ctx, sshc.Config{Host: srv.Host, Port: srv.Port, User: tc.user, KeyFiles: []string{srv.KeyFile}, KnownHosts: kh, OwnKnownHosts: true, Sudo: true})
		require.NoError(t, err)
		_, err = c.Stream(ctx, "true", nil, nil, nil)
		require.NoError(t, err)
		cmds := srv.Commands()
		assert.True(t, strings.HasPrefix(cmds[len(cmds)-1], tc.prefix), "%s: %s", tc.user, cmds[len(cmds)-1])
		c.Close()
	}
}

func TestFiles(t *testing.T) {
	t.Parallel()
	srv := sshctest.Start(t)
	c := dial(t, srv, filepath.Join(t.TempDir(), "known_hosts"))
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a dir", "it's.secret")

	_, err := c.ReadFile(ctx, path)
	assert.ErrorIs(t, err, fs.ErrNotExist)

	data := []byte("line\x00binary\n\xff")
	require.NoError(t, c.WriteFile(ctx, path, data, 0o600))
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm())
	got, err := c.ReadFile(ctx, path)
	require.NoError(t, err)
	assert.Equal(t, data, got)

	require.NoError(t, c.WriteFile(ctx, path, []byte("new"), 0o644))
	got, err = c.ReadFile(ctx, path)
	require.NoError(t, err)
	assert.Equal(t, "new", string(got))
	st, err = os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o644), st.Mode().Perm())
	left, err := filepath.Glob(filepath.Join(filepath.Dir(path), "*.bootlab-tmp"))
	require.NoError(t, err)
	assert.Empty(t, left)

	err = c.WriteFile(ctx, "/proc/no/such", []byte("x"), 0o600)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/proc/no/such")
}

// The first connection records the host key; the next one accepts it; a
// different key for the same address is refused with a typed error that
// says how to forget the old key.
func TestTrustOnFirstUse(t *testing.T) {
	t.Parallel()
	srv := sshctest.Start(t)
	kh := filepath.Join(t.TempDir(), "ssh", "known_hosts")
	dial(t, srv, kh)
	dial(t, srv, kh)
	data, err := os.ReadFile(kh)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(data), "\n"), "one host key recorded")
	assert.Contains(t, string(data), strings.TrimSpace(string(ssh.MarshalAuthorizedKey(srv.HostKey))))
	st, err := os.Stat(kh)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm())

	// Another server pretending to be at the same address.
	_, other := sshctest.Key(t)
	line := strings.Replace(string(data), strings.TrimSpace(string(ssh.MarshalAuthorizedKey(srv.HostKey))), strings.TrimSpace(string(ssh.MarshalAuthorizedKey(other.PublicKey()))), 1)
	require.NoError(t, os.WriteFile(kh, []byte(line), 0o600))
	_, err = sshc.Dial(context.Background(), sshc.Config{Host: srv.Host, Port: srv.Port, User: "root", KeyFiles: []string{srv.KeyFile}, KnownHosts: kh, OwnKnownHosts: true})
	var mm *sshc.HostKeyMismatchError
	require.ErrorAs(t, err, &mm)
	assert.Equal(t, 1, mm.Line)
	assert.Contains(t, err.Error(), "ssh-keygen -R")

	// no_verify: any key, nothing recorded.
	kh2 := filepath.Join(t.TempDir(), "known_hosts")
	c, err := sshc.Dial(context.Background(), sshc.Config{Host: srv.Host, Port: srv.Port, User: "root", KeyFiles: []string{srv.KeyFile}, KnownHosts: kh2, OwnKnownHosts: true, InsecureIgnoreHostKey: true})
	require.NoError(t, err)
	c.Close()
	_, err = os.Stat(kh2)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestDialErrors(t *testing.T) {
	t.Parallel()
	srv := sshctest.Start(t)
	ctx := context.Background()
	kh := filepath.Join(t.TempDir(), "known_hosts")
	_, err := sshc.Dial(ctx, sshc.Config{Host: srv.Host, Port: srv.Port, User: "root", KeyFiles: []string{"/nonexistent/key"}, KnownHosts: kh, OwnKnownHosts: true})
	assert.ErrorContains(t, err, "ssh key /nonexistent/key")
	// A FIFO as the key (?keyfile= names it) is refused, not read forever.
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	start := time.Now()
	_, err = sshc.Dial(ctx, sshc.Config{Host: srv.Host, Port: srv.Port, User: "root", KeyFiles: []string{fifo}, KnownHosts: kh, OwnKnownHosts: true})
	assert.ErrorContains(t, err, "is a FIFO (named pipe), not a regular file")
	assert.Less(t, time.Since(start), time.Second)
	_, err = sshc.Dial(ctx, sshc.Config{Host: srv.Host, Port: srv.Port, User: "root", KeyFiles: []string{srv.KeyFile}})
	assert.ErrorContains(t, err, "no known_hosts file")
	_, err = sshc.Dial(ctx, sshc.Config{Port: srv.Port, User: "root"})
	assert.ErrorContains(t, err, "no host")

	// A key the server does not accept.
	pem, _ := sshctest.Key(t)
	other := filepath.Join(t.TempDir(), "other")
	require.NoError(t, os.WriteFile(other, pem, 0o600))
	_, err = sshc.Dial(ctx, sshc.Config{Host: srv.Host, Port: srv.Port, User: "root", KeyFiles: []string{other}, KnownHosts: kh, OwnKnownHosts: true})
	assert.ErrorContains(t, err, "unable to authenticate")

	// Nothing listening.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().(*net.TCPAddr)
	ln.Close()
	_, err = sshc.Dial(ctx, sshc.Config{Host: "127.0.0.1", Port: addr.Port, User: "root", KeyFiles: []string{srv.KeyFile}, KnownHosts: kh, OwnKnownHosts: true})
	assert.ErrorContains(t, err, "connection refused")
}

func TestStreamHonoursContext(t *testing.T) {
	t.Parallel()
	srv := sshctest.Start(t)
	c := dial(t, srv, filepath.Join(t.TempDir(), "known_hosts"))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	code, err := c.Stream(ctx, "sleep 30", nil, nil, nil)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, -1, code)
	// The connection still serves the next command.
	r, err := c.Run(context.Background(), "echo ok")
	require.NoError(t, err)
	assert.Equal(t, "ok\n", string(r.Stdout))
}

// echoServer answers each line with the line upper-cased.
func echoServer(t *testing.T, network, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					_, _ = io.WriteString(c, strings.ToUpper(sc.Text())+"\n")
				}
			}()
		}
	}()
	return ln
}

func roundTrip(t *testing.T, c net.Conn) string {
	t.Helper()
	defer c.Close()
	_, err := io.WriteString(c, "ping\n")
	require.NoError(t, err)
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	return line
}

func TestDialContextThroughTheHost(t *testing.T) {
	t.Parallel()
	srv := sshctest.Start(t)
	c := dial(t, srv, filepath.Join(t.TempDir(), "known_hosts"))
	ctx := context.Background()

	tcp := echoServer(t, "tcp", "127.0.0.1:0")
	conn, err := c.DialContext(ctx, "tcp", tcp.Addr().String())
	require.NoError(t, err)
	assert.Equal(t, "PING\n", roundTrip(t, conn))

	sock := filepath.Join(t.TempDir(), "s.sock")
	echoServer(t, "unix", sock)
	conn, err = c.DialContext(ctx, "unix", sock)
	require.NoError(t, err)
	assert.Equal(t, "PING\n", roundTrip(t, conn))
	assert.Equal(t, []string{"tcp " + tcp.Addr().String(), "unix " + sock}, srv.Dials())

	_, err = c.DialContext(ctx, "unix", filepath.Join(t.TempDir(), "none.sock"))
	assert.ErrorContains(t, err, "none.sock")
	_, err = c.DialContext(ctx, "udp", "127.0.0.1:53")
	assert.ErrorContains(t, err, `network "udp" is not supported`)
}

// A client dialled through another one (ProxyJump) reaches a server the
// first host can reach; both host keys are checked and recorded.
func TestProxyJump(t *testing.T) {
	t.Parallel()
	jump := sshctest.Start(t)
	node := sshctest.Start(t)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	j := dial(t, jump, kh)
	ctx := context.Background()
	n, err := sshc.Dial(ctx, sshc.Config{Host: node.Host, Port: node.Port, User: "core", KeyFiles: []string{node.KeyFile}, KnownHosts: kh, OwnKnownHosts: true, Via: j})
	require.NoError(t, err)
	defer n.Close()
	r, err := n.Run(ctx, "echo behind")
	require.NoError(t, err)
	assert.Equal(t, "behind\n", string(r.Stdout))
	assert.Equal(t, []string{"tcp " + node.Addr}, jump.Dials())
	assert.Equal(t, 1, node.Conns())
	data, err := os.ReadFile(kh)
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(data), "\n"))
	assert.Equal(t, "core@"+node.Addr, n.String())

	// Closing the jump host ends the connection behind it.
	require.NoError(t, j.Close())
	_, err = n.Run(ctx, "true")
	assert.Error(t, err)
}

func TestQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":          "''",
		"/a/b-c.d":  "/a/b-c.d",
		"a b":       "'a b'",
		"it's":      `'it'\''s'`,
		"$(rm -rf)": "'$(rm -rf)'",
	} {
		assert.Equal(t, want, sshc.Quote(in), in)
	}
}

func TestHostKeyMismatchMessage(t *testing.T) {
	t.Parallel()
	err := error(&sshc.HostKeyMismatchError{Host: "10.0.0.5:22", KnownHosts: "/k", Line: 3})
	assert.Equal(t, "host key of 10.0.0.5:22 differs from the one recorded in /k line 3: refusing to connect. If the host was rebuilt, forget the old key with `ssh-keygen -R 10.0.0.5 -f /k` and retry", err.Error())
	assert.False(t, errors.Is(err, fs.ErrNotExist))
}

// An idle connection sends keepalives; the server's answer (even a
// refusal, as OpenSSH gives) keeps it open.
func TestKeepAlive(t *testing.T) {
	t.Parallel()
	srv := sshctest.Start(t)
	c, err := sshc.Dial(context.Background(), sshc.Config{Host: srv.Host, Port: srv.Port, User: "root", KeyFiles: []string{srv.KeyFile},
		KnownHosts: filepath.Join(t.TempDir(), "kh"), OwnKnownHosts: true, KeepAlive: 20 * time.Millisecond})
	require.NoError(t, err)
	defer c.Close()
	for i := 0; i < 100 && srv.GlobalRequests() < 3; i++ {
		time.Sleep(20 * time.Millisecond) // polls the counter; asserts the count
	}
	assert.GreaterOrEqual(t, srv.GlobalRequests(), 3)
	r, err := c.Run(context.Background(), "echo alive")
	require.NoError(t, err)
	assert.Equal(t, "alive\n", string(r.Stdout))
}

// A known_hosts file is a user's file: a FIFO or a device is refused at
// once (it hung the connection, deaf to Ctrl-C), one the user named must
// exist (bootlab makes only its own), and an existing one is appended to.
func TestKnownHostsIsAUsersFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	for _, own := range []bool{false, true} {
		start := time.Now()
		_, err := sshc.TrustOnFirstUse(fifo, own, nil)
		require.EqualError(t, err, "known_hosts "+fifo+": is a FIFO (named pipe), not a regular file: give the path of a regular file")
		assert.Less(t, time.Since(start), time.Second)
		_, err = sshc.TrustOnFirstUse("/dev/null", own, nil)
		require.EqualError(t, err, "known_hosts /dev/null: is a character device, not a regular file: give the path of a regular file")
	}
	missing := filepath.Join(dir, "ssh", "known_hosts")
	_, err := sshc.TrustOnFirstUse(missing, false, nil)
	require.EqualError(t, err, "known_hosts "+missing+": not found: bootlab records host keys in a known_hosts file it did not make only when the file exists; create it (touch "+missing+") or name another")
	assert.NoDirExists(t, filepath.Dir(missing), "nothing made outside bootlab's own directories")

	// bootlab's own (a lab's) is made, private.
	_, err = sshc.TrustOnFirstUse(missing, true, nil)
	require.NoError(t, err)
	st, err := os.Stat(missing)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm())
	st, err = os.Stat(filepath.Dir(missing))
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o700), st.Mode().Perm())

	// A user's existing file gets the first key appended.
	srv := sshctest.Start(t)
	users := filepath.Join(dir, "users_known_hosts")
	require.NoError(t, os.WriteFile(users, []byte("# mine\n"), 0o644))
	c, err := sshc.Dial(context.Background(), sshc.Config{Host: srv.Host, Port: srv.Port, User: "root", KeyFiles: []string{srv.KeyFile}, KnownHosts: users})
	require.NoError(t, err)
	c.Close()
	data, err := os.ReadFile(users)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "# mine\n"), string(data))
	assert.Contains(t, string(data), strings.TrimSpace(string(ssh.MarshalAuthorizedKey(srv.HostKey))))
}
