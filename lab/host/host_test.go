package host_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/internal/sshc/sshctest"
	"github.com/bootlab/bootlab/lab/host"
)

// hosts are the two implementations, the SSH one against an in-process
// server on this machine, so both see the same files and sockets.
func hosts(t *testing.T) map[string]host.Host {
	t.Helper()
	srv := sshctest.Start(t)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	uri := srv.LibvirtURI(t, kh)
	h, err := host.Open(context.Background(), uri, host.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	return map[string]host.Host{"local": host.Local{}, "ssh": h}
}

// Local and SSH behave the same for every operation lab uses.
func TestHostsBehaveAlike(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			_, _ = io.WriteString(c, strings.ToUpper(line))
			c.Close()
		}
	}()
	for name, h := range hosts(t) {
		t.Run(name, func(t *testing.T) {
			var out, errb strings.Builder
			code, err := h.Run(ctx, `read -r x; echo "got $x"; echo oops >&2; [[ -n $BASH_VERSION ]] && exit 4`, strings.NewReader("in\n"), &out, &errb)
			require.NoError(t, err)
			assert.Equal(t, 4, code, "bash runs the command")
			assert.Equal(t, "got in\n", out.String())
			assert.Equal(t, "oops\n", errb.String())

			got, err := host.Output(ctx, h, "printf hi")
			require.NoError(t, err)
			assert.Equal(t, "hi", got)
			_, err = host.Output(ctx, h, "echo nope >&2; exit 2")
			assert.EqualError(t, err, "on "+h.Name()+": echo nope >&2; exit 2: exit status 2: nope")

			path := filepath.Join(t.TempDir(), "sub", "f.cfg")
			_, err = h.ReadFile(ctx, path)
			assert.ErrorIs(t, err, fs.ErrNotExist)
			require.NoError(t, h.WriteFile(ctx, path, []byte("secret"), 0o600))
			st, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm())
			require.NoError(t, h.WriteFile(ctx, path, []byte("public"), 0o644))
			st, err = os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, fs.FileMode(0o644), st.Mode().Perm())
			data, err := h.ReadFile(ctx, path)
			require.NoError(t, err)
			assert.Equal(t, "public", string(data))
			entries, err := os.ReadDir(filepath.Dir(path))
			require.NoError(t, err)
			assert.Len(t, entries, 1, "no temporary file left")

			c, err := h.Dial(ctx, "tcp", ln.Addr().String())
			require.NoError(t, err)
			_, err = io.WriteString(c, "ping\n")
			require.NoError(t, err)
			reply, err := io.ReadAll(c)
			require.NoError(t, err)
			assert.Equal(t, "PING\n", string(reply))
			c.Close()

			assert.Equal(t, name == "ssh", h.Remote())
		})
	}
}

func TestOpenLocalURIs(t *testing.T) {
	// Not parallel: its test:///default connection shares the libvirt test driver's one in-memory state with every connection open at the same time.
	for _, uri := range []string{"qemu:///system", "qemu:///session", "test:///default", "qemu:///system?socket=/x"} {
		h, err := host.Open(context.Background(), uri, host.Options{})
		require.NoError(t, err, uri)
		assert.Equal(t, "localhost", h.Name())
		assert.False(t, h.Remote())
		assert.False(t, host.IsRemote(uri))
	}
	assert.True(t, host.IsRemote("qemu+ssh://root@server/system"))
}

func TestSSHConfig(t *testing.T) {
	t.Parallel()
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	cfg, err := host.SSHConfig("qemu+ssh://trainer@server.lan:2222/system?keyfile=~/.ssh/lab&known_hosts=/k&no_verify=1")
	require.NoError(t, err)
	assert.Equal(t, sshc.Config{Host: "server.lan", Port: 2222, User: "trainer", KeyFiles: []string{filepath.Join(home, ".ssh", "lab")},
		KnownHosts: "/k", InsecureIgnoreHostKey: true, Agent: true}, cfg)

	cfg, err = host.SSHConfig("qemu+ssh://root@10.0.0.2/system")
	require.NoError(t, err)
	assert.Equal(t, 0, cfg.Port, "sshc defaults to 22")
	assert.Nil(t, cfg.KeyFiles, "~/.ssh/id_* and the agent, as libvirt")
	assert.Equal(t, filepath.Join(home, ".ssh", "known_hosts"), cfg.KnownHosts)
	assert.False(t, cfg.InsecureIgnoreHostKey)

	for uri, want := range map[string]string{
		"qemu+tcp://server/system":     "only the ssh transport",
		"qemu+ssh:///system":           "no host",
		"qemu+ssh://root@server:0/sys": "is not a port number",
	} {
		_, err := host.SSHConfig(uri)
		assert.ErrorContains(t, err, want, uri)
		assert.ErrorContains(t, err, "libvirt.uri", uri)
	}
	assert.Equal(t, "/var/run/libvirt/libvirt-sock", host.RemoteSocket("qemu+ssh://h/system"))
	assert.Equal(t, "/run/libvirt/virtqemud-sock", host.RemoteSocket("qemu+ssh://h/system?socket=/run/libvirt/virtqemud-sock"))
}

func TestOpenRemoteFailsClearly(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	srv := sshctest.Start(t)
	_, err = host.Open(context.Background(), fmt.Sprintf("qemu+ssh://root@%s/system?keyfile=%s&known_hosts=%s", addr, srv.KeyFile, sshctest.KnownHosts(t)), host.Options{})
	assert.ErrorContains(t, err, "connection refused")
	assert.ErrorContains(t, err, "libvirt URI qemu+ssh://root@"+addr)
}

// A local command runs in bootlab's working directory, or in / once the
// user removed it (where haproxy -c failed): the test runs itself in a
// directory it removes first.
func TestLocalRunsWhereItCan(t *testing.T) {
	t.Parallel()
	if os.Getenv("BOOTLAB_HOST_TEST_GONE_CWD") == "1" {
		var out strings.Builder
		code, err := host.Local{}.Run(context.Background(), "pwd", nil, &out, os.Stderr)
		if err != nil || code != 0 {
			t.Fatalf("pwd in a removed directory: exit %d, %v", code, err)
		}
		fmt.Print("PWD=" + out.String())
		return
	}
	var out strings.Builder
	code, err := host.Local{}.Run(context.Background(), "pwd", nil, &out, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 0, code)
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, wd+"\n", out.String(), "relative paths stay relative to bootlab's directory")

	gone := t.TempDir() + "/gone"
	require.NoError(t, os.Mkdir(gone, 0o755))
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command("bash", "-c", `cd "$1" && rmdir "$1" && exec "$2" -test.run='^TestLocalRunsWhereItCan$'`, "bash", gone, self)
	cmd.Env = append(os.Environ(), "BOOTLAB_HOST_TEST_GONE_CWD=1")
	got, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", got)
	assert.Contains(t, string(got), "PWD=/\n")
}
