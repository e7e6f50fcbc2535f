//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/cache"
	"github.com/bootlab/bootlab/lab/labdir"
)

// newRemoteLab is newLabWith for a lab whose hypervisor is h, reached from
// the root namespace over qemu+ssh only.
func newRemoteLab(t *testing.T, h *remoteHost, extra string) labEnv {
	t.Helper()
	return newLabSpec(t, fmt.Sprintf("libvirt:\n  uri: %q\n%s", h.URI(), extra), false)
}

// workstationOnly are path prefixes that exist on the workstation only
// (the lab directory, the image cache): a domain XML on the remote host
// that names one points its VM at nothing there.
func workstationOnly(l labEnv) []string {
	return []string{l.Dir, cache.Dir() + "/", "/root/.cache/bootlab"}
}

// checkRemoteDomains fails the test if a domain of lab l on h names a
// workstation-only path (Ignition, kernel, initrd, disks, console log).
func checkRemoteDomains(t *testing.T, h *remoteHost, l labEnv) {
	t.Helper()
	out, err := h.Virsh(t, "list", "--all", "--name")
	require.NoError(t, err)
	var doms []string
	for _, d := range strings.Fields(out) {
		if strings.HasPrefix(d, "bootlab-"+l.Name+"-") {
			doms = append(doms, d)
		}
	}
	require.NotEmpty(t, doms, "no domain of lab %s on the remote host (virsh list: %q)", l.Name, out)
	for _, d := range doms {
		x, err := h.Virsh(t, "dumpxml", d)
		require.NoError(t, err)
		for _, p := range workstationOnly(l) {
			for _, line := range strings.Split(x, "\n") {
				if strings.Contains(line, p) {
					t.Errorf("domain %s on the remote host names the workstation-only path %s: %s\n(everything a VM reads must be uploaded to the hypervisor: Ignition, kernel, initrd as volumes in the lab's pool, the console log on the host)", d, p, strings.TrimSpace(line))
				}
			}
		}
	}
}

// remoteLeftovers lists what lab l left on h: libvirt objects, haproxy,
// and files named after the lab in the host's private directories.
func remoteLeftovers(t *testing.T, h *remoteHost, l labEnv) []string {
	t.Helper()
	var left []string
	for _, kind := range [][]string{{"list", "--all", "--name"}, {"net-list", "--all", "--name"}, {"pool-list", "--all", "--name"}} {
		out, err := h.Virsh(t, kind...)
		require.NoError(t, err)
		for _, n := range strings.Fields(out) {
			if strings.HasPrefix(n, "bootlab-"+l.Name) {
				left = append(left, "remote "+kind[0]+":"+n)
			}
		}
	}
	for _, p := range h.processes(t, "haproxy", "dnsmasq", "qemu-system-x86") {
		left = append(left, "remote process "+p)
	}
	// libvirt keeps each domain's own qemu log (<domain>.log) and its
	// network's dnsmasq state under /run/libvirt, as it does locally.
	out, err := h.Exec(t, "find", "/var/lib/bootlab", "/var/lib/bootlab-e2e", "/var/lib/libvirt", "/var/log/libvirt", "/var/cache/bootlab", "/run",
		"-path", "/run/libvirt", "-prune", "-o",
		"-name", "*"+l.Name+"*", "!", "-regex", `/var/log/libvirt/qemu/bootlab-[^/]*\.log`, "-print")
	require.NoError(t, err, out)
	for _, f := range strings.Fields(out) {
		left = append(left, "remote file "+f)
	}
	return left
}

// processes lists the host's processes (all of them live in its network
// namespace) whose command is one of names.
func (h *remoteHost) processes(t *testing.T, names ...string) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "pids", h.Name).Output()
	require.NoError(t, err)
	var found []string
	for _, f := range strings.Fields(string(out)) {
		pid, _ := strconv.Atoi(f)
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			continue
		}
		for _, n := range names {
			if strings.HasPrefix(strings.TrimSpace(string(comm)), n) {
				found = append(found, fmt.Sprintf("%s[%d]", strings.TrimSpace(string(comm)), pid))
			}
		}
	}
	return found
}

// workstationLeftovers lists the lab-directory entries that down removes
// on a local lab and that are still there.
func workstationLeftovers(l labEnv) []string {
	var left []string
	for _, f := range []string{"console", "ignition", "haproxy", "ssh", "pki", "state.json", "verify.json"} {
		if _, err := os.Lstat(filepath.Join(l.Dir, "lab", f)); err == nil {
			left = append(left, "workstation "+filepath.Join(l.Dir, "lab", f))
		}
	}
	return left
}

// TestRemoteLab is issue 16's evidence: from the root namespace (the
// trainer's laptop) bootlab builds a probe lab on a second libvirt host
// reached over qemu+ssh only, verifies it through the tunnel, pivots, and
// takes it down leaving nothing on either side; then a rehearsal lab's
// bootstrap answers `lab ssh` and `stage` through the host (ProxyJump).
// One TCG lab at a time.
func TestRemoteLab(t *testing.T) {
	// Not parallel: the remote host (scripts/host/remote-host.sh) is one per machine, on 10.254.0.0/30.
	h := newRemoteHost(t)

	t.Run("probe", func(t *testing.T) {
		l := newRemoteLab(t, h, "topology: {masters: 1, workers: 0}\n")
		up := mustRun(t, "lab", "up", "-f", l.SpecFile)
		assert.Contains(t, up.Stderr, "accelerator: tcg")

		// The lab lives on the remote host, not on the root's libvirtd.
		assert.Empty(t, leftovers(t, l), "the lab's objects must be on the remote host only")
		checkRemoteDomains(t, h, l)
		assert.NotEmpty(t, h.processes(t, "haproxy"), "the lab's haproxy runs on the hypervisor host")
		nets, err := h.Virsh(t, "net-list", "--name")
		require.NoError(t, err)
		assert.Contains(t, nets, "bootlab-"+l.Name)
		// The lab network exists only behind the host: no interface here
		// holds its gateway and no route leads to it but the default one,
		// so whatever verify gets through below came through the host.
		// (A TCP connect proves nothing: this machine's uplink may accept
		// any connection.)
		addrs, err := exec.Command("ip", "-br", "addr").Output()
		require.NoError(t, err)
		assert.NotContains(t, string(addrs), l.Gateway()+"/", "the lab's bridge is in the root namespace")
		route, err := exec.Command("ip", "route", "get", l.Gateway()).Output()
		require.NoError(t, err)
		def, err := exec.Command("ip", "route", "show", "default").Output()
		require.NoError(t, err)
		if f := strings.Fields(string(def)); len(f) >= 3 && f[1] == "via" {
			assert.Contains(t, string(route), "via "+f[2], "the lab network is routed here other than by the default route")
		}

		// A second up changes nothing and uploads nothing.
		again := mustRun(t, "lab", "up", "-f", l.SpecFile)
		assert.Contains(t, again.Stderr, "nothing to change")

		// verify: DNS, the load balancer and the console reports, all
		// through the host's SSH connection.
		start := time.Now()
		v, r := verifyJSON(t, l, "8m")
		require.Equal(t, 0, r.Code, "verify through the tunnel failed:\n%s\n%s", strings.Join(failedChecks(v), "\n"), r.Stderr)
		assert.Len(t, v.Reports, 2, "a report from every node, read on the hypervisor")
		t.Logf("BENCH remote probe lab (1 bootstrap, 1 master, TCG, qemu+ssh): verify ✓ after %.1fs", time.Since(start).Seconds())
		names := map[string]bool{}
		for _, c := range v.Checks {
			names[c.Group+" "+c.Name] = c.OK
		}
		for _, want := range []string{"host dns api.ocp.lab.local", "host lb api :6443", "host lb machine-config :22623", "host backend api/bootstrap", "master-0 ignition-fetch"} {
			assert.True(t, names[want], "check %q is there and ✓", want)
		}

		// Host DNS, asked for: lab dns-proxy answers the lab's names on
		// the workstation, over UDP and TCP, from the dnsmasq behind the host.
		checkDNSProxy(t, l)

		// status finds the load balancer on the host; console reads the
		// node's log there.
		r = mustRun(t, "lab", "status", "-f", l.SpecFile, "-o", "json")
		var st lab.Status
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &st), r.Stdout)
		require.NotNil(t, st.LoadBalancer, "load balancer status: %s", st.LoadBalancerError)
		assert.True(t, st.LoadBalancer.Running, "haproxy runs on the hypervisor host")
		for _, n := range st.Nodes {
			assert.Equal(t, "running", n.State, n.Name)
		}
		r = mustRun(t, "lab", "console", "-f", l.SpecFile, "--no-follow", "master-0")
		assert.Contains(t, r.Stdout, "master-0", "the console log, read on the hypervisor, holds the node's report")

		mustRun(t, "lab", "pivot", "-f", l.SpecFile)
		v, r = verifyJSON(t, l, "3m")
		require.Equal(t, 0, r.Code, "verify after pivot failed:\n%s", strings.Join(failedChecks(v), "\n"))
		assert.True(t, v.Pivoted)
		for _, c := range v.Checks {
			assert.NotContains(t, c.Name, "/bootstrap", "no bootstrap backend after pivot")
		}

		labDown(t, l.LabDir, "-f", l.SpecFile)
		assert.Empty(t, remoteLeftovers(t, h, l), "lab down leaves nothing on the remote host")
		assert.Empty(t, workstationLeftovers(l), "lab down leaves nothing of the lab on the workstation")
		assert.Empty(t, leftovers(t, l))
	})

	t.Run("ssh", func(t *testing.T) {
		l := newRemoteLab(t, h, "topology: {masters: 1, workers: 0}\n")
		mustRun(t, "lab", "up", "-f", l.SpecFile, "--manual-bootstrap")
		checkRemoteDomains(t, h, l)

		// lab ssh reaches the bootstrap through the host (like ProxyJump).
		var r result
		deadline := time.Now().Add(4 * time.Minute)
		for {
			r = run(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "true")
			if r.Code == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(3 * time.Second)
		}
		require.Equal(t, 0, r.Code, "lab ssh bootstrap -- true through the host never succeeded:\n%s", r)
		r = mustRun(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "uname -n; sudo -n id -u")
		assert.Equal(t, "bootstrap\n0\n", r.Stdout)
		r = run(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "exit 5")
		assert.Equal(t, 5, r.Code, "the remote exit status comes back through the tunnel")

		// Without a command: a login shell (no terminal here: it reads stdin).
		cmd := exec.Command(bootlabBin, "lab", "ssh", "-f", l.SpecFile, "bootstrap")
		cmd.Stdin = strings.NewReader("echo shell on $(uname -n)\nexit 6\n")
		out, err := cmd.Output()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "lab ssh bootstrap < script: %s", out)
		assert.Equal(t, 6, ee.ExitCode())
		assert.Equal(t, "shell on bootstrap\n", string(out))

		// With a terminal (script(1) gives it one): a login shell on a
		// pseudo-terminal, through the host.
		cmd = exec.Command("script", "-qec", bootlabBin+" lab ssh -f "+l.SpecFile+" bootstrap", "/dev/null")
		cmd.Stdin = strings.NewReader("test -t 0 && echo tty-$((6*7))\nexit 3\n")
		out, err = cmd.Output()
		require.ErrorAs(t, err, &ee, "lab ssh bootstrap on a terminal: %s", out)
		assert.Equal(t, 3, ee.ExitCode(), "%s", out)
		assert.Contains(t, string(out), "tty-42", "the shell on the node has a terminal")

		// The stage commands take the same way to the node.
		mustRun(t, "stage", "run", "-f", l.SpecFile, "01")
		r = mustRun(t, "stage", "status", "-f", l.SpecFile, "-o", "json")
		var st struct {
			Next string `json:"next"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &st), r.Stdout)
		assert.NotEmpty(t, st.Next)
		assert.False(t, strings.HasPrefix(st.Next, "01"), "stage 01 ran on the node through the host: next is a later stage, got %q", st.Next)

		// One host-key policy: the node's key is in the lab's known_hosts,
		// the user's ~/.ssh/known_hosts never learns about lab nodes.
		s := loadSpec(t, l)
		kh, err := os.ReadFile(labdir.KnownHosts(s))
		require.NoError(t, err)
		bs, _ := s.Node("bootstrap")
		assert.Contains(t, string(kh), bs.IP)
		if home, err := os.UserHomeDir(); err == nil {
			if b, err := os.ReadFile(filepath.Join(home, ".ssh", "known_hosts")); err == nil {
				assert.NotContains(t, string(b), bs.IP)
				assert.NotContains(t, string(b), h.Addr, "the hypervisor's key is checked against the URI's known_hosts")
			}
		}

		labDown(t, l.LabDir, "-f", l.SpecFile)
		assert.Empty(t, remoteLeftovers(t, h, l), "lab down leaves nothing on the remote host")
		assert.Empty(t, workstationLeftovers(l))
	})
}

// checkDNSProxy runs `lab dns-proxy` on a free local port and resolves the
// lab's API name through it with dig, over UDP and over TCP: the answers
// come from the lab's dnsmasq on the remote host, through the SSH tunnel.
func checkDNSProxy(t *testing.T, l labEnv) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	listen := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(listen)
	cmd := exec.Command(bootlabBin, "lab", "dns-proxy", "-f", l.SpecFile, "--listen", listen)
	var errb testutil.SyncBuffer
	cmd.Stderr = &errb
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		err := cmd.Wait()
		assert.NoError(t, err, "dns-proxy exits 0 when interrupted:\n%s", errb.String())
	}()
	require.Eventually(t, func() bool { return strings.Contains(errb.String(), "answering DNS on") }, time.Minute, 200*time.Millisecond, "dns-proxy did not start:\n%s", errb.String())
	assert.Contains(t, errb.String(), "server=/ocp.lab.local/127.0.0.1#"+port, "it prints the resolver line")
	for _, proto := range []string{"+notcp", "+tcp"} {
		out, err := exec.Command("dig", "+short", "+time=5", "+tries=2", proto, "-p", port, "@127.0.0.1", "api.ocp.lab.local", "A").Output()
		require.NoError(t, err, "dig %s through dns-proxy", proto)
		assert.Equal(t, []string{l.Gateway()}, strings.Fields(string(out)), "dig %s through dns-proxy: api.ocp.lab.local is the lab's load balancer", proto)
	}
}
