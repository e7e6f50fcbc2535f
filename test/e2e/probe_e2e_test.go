//go:build e2e

package e2e

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	stdnet "net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/labdir"
)

// verifyResult is the part of `lab verify -o json` the tests read.
type verifyResult struct {
	OK      bool           `json:"ok"`
	Pivoted bool           `json:"bootstrapRemoved"`
	Elapsed int64          `json:"elapsedMs"`
	Reports map[string]any `json:"reports"`
	Checks  []verifyCheck  `json:"checks"`
}

type verifyCheck struct {
	Group  string `json:"group"`
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	State  string `json:"state"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
}

func verifyJSON(t *testing.T, l labEnv, timeout string) (verifyResult, result) {
	t.Helper()
	r := run(t, "lab", "verify", "-f", l.SpecFile, "--timeout", timeout, "-o", "json")
	var v verifyResult
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &v), r.String())
	return v, r
}

func failedChecks(v verifyResult) []string {
	var out []string
	for _, c := range v.Checks {
		if !c.OK {
			out = append(out, fmt.Sprintf("%s %s: %s (fix: %s)", c.Group, c.Name, c.Detail, c.Fix))
		}
	}
	return out
}

func loadSpec(t *testing.T, l labEnv) *spec.Spec {
	t.Helper()
	s, err := spec.Load(l.SpecFile)
	require.NoError(t, err)
	s.Defaults()
	return s
}

// TestProbeLabLifecycle is the main path: a 1+3+2 probe lab comes
// up, verifies with every check ✓, pivots (bootstrap out of the load
// balancer) and still verifies with the API served by the masters, then
// goes down leaving nothing. It logs the time from `lab up` to all ✓
// (BENCH line, printed by `make bench`).
func TestProbeLabLifecycle(t *testing.T) {
	parallel(t)
	l := newLab(t)
	start := time.Now()
	mustRun(t, "lab", "up", "-f", l.SpecFile, "--start-workers")
	up := time.Since(start)
	v, r := verifyJSON(t, l, "5m")
	total := time.Since(start)
	require.Equal(t, 0, r.Code, "verify failed:\n%s\n%s", strings.Join(failedChecks(v), "\n"), r.Stderr)
	assert.True(t, v.OK)
	assert.Len(t, v.Reports, 6, "a report from every node")
	t.Logf("BENCH probe lab (1 bootstrap, 3 masters, 2 workers, TCG): lab up %.1fs, lab up -> all %d checks ✓ %.1fs",
		up.Seconds(), len(v.Checks), total.Seconds())

	names := map[string]bool{}
	for _, c := range v.Checks {
		names[c.Group+" "+c.Name] = true
	}
	for _, c := range v.Checks {
		if c.Group == "host" && c.Name == "lb api :6443" {
			assert.Contains(t, c.Detail, "answered by", "the API stand-ins name themselves")
		}
	}
	for _, want := range []string{
		"bootstrap serve mcs :22623", "master-0 ignition-fetch", "worker-1 ignition-fetch",
		"host backend api/bootstrap", "host backend machine-config/master-2", "host lb api :6443",
		"host dns *.apps.ocp.lab.local", "worker-0 serve ingress :443",
	} {
		assert.True(t, names[want], "verify has check %q", want)
	}

	// The table form says ✓ for every line and exits 0.
	r = mustRun(t, "lab", "verify", "-f", l.SpecFile, "--timeout", "1m")
	assert.NotContains(t, r.Stdout, "✗")
	assert.Contains(t, r.Stdout, "✓  host")

	mustRun(t, "lab", "pivot", "-f", l.SpecFile)
	v, r = verifyJSON(t, l, "2m")
	require.Equal(t, 0, r.Code, "verify after pivot failed:\n%s", strings.Join(failedChecks(v), "\n"))
	assert.True(t, v.Pivoted)
	var apiBackends []string
	for _, c := range v.Checks {
		assert.NotEqual(t, "bootstrap", c.Group, "the bootstrap's report is not expected after pivot")
		assert.NotContains(t, c.Name, "/bootstrap", "no bootstrap backend after pivot")
		if strings.HasPrefix(c.Name, "backend api/") {
			apiBackends = append(apiBackends, c.Name)
		}
		if c.Name == "lb api :6443" {
			assert.Contains(t, c.Detail, "answered by master-")
			assert.NotContains(t, c.Detail, "bootstrap")
		}
	}
	assert.ElementsMatch(t, []string{"backend api/master-0", "backend api/master-1", "backend api/master-2"}, apiBackends,
		"the API is served by the masters")

	labDown(t, l.LabDir, "-f", l.SpecFile)
	assert.Empty(t, leftovers(t, l))
	s := loadSpec(t, l)
	if data, err := os.ReadFile(labdir.HAProxyPID(s)); err == nil {
		pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		assert.False(t, pid > 0 && syscall.Kill(pid, 0) == nil, "haproxy %d still runs after down", pid)
	}
}

// TestProbeVerifyNamesBrokenThings breaks one thing at a time on a small
// probe lab and asserts that verify fails (exit 4) naming it.
func TestProbeVerifyNamesBrokenThings(t *testing.T) {
	parallel(t)
	l := newLabWith(t, "topology:\n  masters: 1\n  workers: 1\n")
	mustRun(t, "lab", "up", "-f", l.SpecFile, "--start-workers")
	v, r := verifyJSON(t, l, "5m")
	require.Equal(t, 0, r.Code, "verify of the intact lab failed:\n%s", strings.Join(failedChecks(v), "\n"))
	s := loadSpec(t, l)
	worker, _ := s.Node("worker-0")
	master, _ := s.Node("master-0")
	net := s.NetworkName()

	t.Run("wrong DNS record", func(t *testing.T) {
		fqdn := s.FQDN(worker)
		wrong := l.CIDR.Addr().As4()
		wrong[3] = 99
		wrongIP := fmt.Sprintf("%d.%d.%d.%d", wrong[0], wrong[1], wrong[2], wrong[3])
		hostXML := func(ip string) string {
			return fmt.Sprintf("<host ip='%s'><hostname>%s</hostname></host>", ip, fqdn)
		}
		_, err := virsh(t, "net-update", net, "delete", "dns-host", hostXML(worker.IP), "--live", "--config")
		require.NoError(t, err)
		_, err = virsh(t, "net-update", net, "add", "dns-host", hostXML(wrongIP), "--live", "--config")
		require.NoError(t, err)

		v, r := verifyJSON(t, l, "5s")
		assert.Equal(t, 4, r.Code)
		assert.False(t, v.OK)
		assert.Contains(t, strings.Join(failedChecks(v), "\n"), "host dns "+fqdn+": "+fqdn+" resolves to "+wrongIP+", expected "+worker.IP)
		tr := run(t, "lab", "verify", "-f", l.SpecFile, "--timeout", "0")
		assert.Equal(t, 4, tr.Code)
		assert.Contains(t, tr.Stdout, "✗  host")
		assert.Contains(t, tr.Stdout, "fix:")

		_, err = virsh(t, "net-update", net, "delete", "dns-host", hostXML(wrongIP), "--live", "--config")
		require.NoError(t, err)
		_, err = virsh(t, "net-update", net, "add", "dns-host", hostXML(worker.IP), "--live", "--config")
		require.NoError(t, err)
		v, r = verifyJSON(t, l, "1m")
		assert.Equal(t, 0, r.Code, "restored record: %s", strings.Join(failedChecks(v), "\n"))
	})

	t.Run("stopped haproxy", func(t *testing.T) {
		data, err := os.ReadFile(labdir.HAProxyPID(s))
		require.NoError(t, err)
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		require.NoError(t, err)
		require.NoError(t, syscall.Kill(pid, syscall.SIGTERM))
		for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
		v, r := verifyJSON(t, l, "5s")
		assert.Equal(t, 4, r.Code)
		failed := strings.Join(failedChecks(v), "\n")
		assert.Contains(t, failed, "host lb haproxy: haproxy is not running")
		assert.Contains(t, failed, "host lb api :6443")

		mustRun(t, "lab", "up", "-f", l.SpecFile, "--start-workers")
		v, r = verifyJSON(t, l, "2m")
		assert.Equal(t, 0, r.Code, "after lab up restarted haproxy: %s", strings.Join(failedChecks(v), "\n"))
	})

	// lab break's port blocks on real VMs: the filter drops what it names
	// at the host's bridge and nothing else, and --undo lets it through.
	t.Run("port blocks", func(t *testing.T) {
		boot, _ := s.Node("bootstrap")
		dial := func(port int) error {
			c, err := stdnet.DialTimeout("tcp", stdnet.JoinHostPort(boot.IP, strconv.Itoa(port)), 5*time.Second)
			if err == nil {
				c.Close()
			}
			return err
		}
		require.NoError(t, dial(22623), "the bootstrap's MCS stand-in answers before the fault")
		mustRun(t, "lab", "break", "mcs-blocked-from-masters", "-f", l.SpecFile)
		err := dial(22623)
		require.Error(t, err, "22623 on the bootstrap is dropped")
		assert.ErrorContains(t, err, "timeout", "dropped, not refused")
		require.NoError(t, dial(6443), "the bootstrap's 6443 still answers")
		list := mustRun(t, "lab", "break", "--list", "-f", l.SpecFile)
		assert.Regexp(t, `mcs-blocked-from-masters\s+api\.lb\s+set `, list.Stdout)
		mustRun(t, "lab", "break", "--undo", "mcs-blocked-from-masters", "-f", l.SpecFile)
		require.NoError(t, dial(22623), "22623 answers again after --undo")
		_, err = virsh(t, "nwfilter-dumpxml", "bootlab-"+s.Name+"-drop-22623")
		assert.Error(t, err, "--undo removes the lab's filter")

		// etcd-peer-blocked drops 2380 between the masters and the
		// bootstrap only: the host's own connections to the bootstrap pass.
		mustRun(t, "lab", "break", "etcd-peer-blocked", "-f", l.SpecFile)
		x, err := virsh(t, "dumpxml", s.DomainName(boot))
		require.NoError(t, err)
		assert.Contains(t, x, "filterref filter='bootlab-"+s.Name+"-drop-2380'")
		require.NoError(t, dial(22623))
		mustRun(t, "lab", "break", "--undo", "-f", l.SpecFile)
		x, err = virsh(t, "dumpxml", s.DomainName(boot))
		require.NoError(t, err)
		assert.NotContains(t, x, "filterref")
	})

	t.Run("pointer config with the wrong CA", func(t *testing.T) {
		other, err := pki.NewCA("root-ca")
		require.NoError(t, err)
		data, err := ignition.Marshal(ignition.Pointer(ignition.MCSURL(s.Cluster.Domain(), "master"), other.CertPEM))
		require.NoError(t, err)
		// The VM reads the Ignition volume of the lab's pool that its domain
		// names (the lab directory's file is only what up uploads).
		dom := s.DomainName(master)
		x, err := virsh(t, "dumpxml", dom)
		require.NoError(t, err)
		m := regexp.MustCompile(`name=["']opt/com\.coreos/config["'] file=["']([^"']+)["']`).FindStringSubmatch(x)
		require.NotNil(t, m, "no fw_cfg Ignition in %s", x)
		require.NoError(t, os.WriteFile(m[1], data, 0o600)) // keeps the owner qemu reads it as
		_, err = virsh(t, "destroy", dom)
		require.NoError(t, err)
		_, err = virsh(t, "start", dom)
		require.NoError(t, err)

		// The rebooted master retries the fetch and reports why it fails;
		// poll verify until its new report (the old boot's report is the
		// last one until the new boot writes) names the CA problem.
		var failed string
		code := 0
		for i := 0; i < 15 && !strings.Contains(failed, "unknown authority"); i++ {
			v, r := verifyJSON(t, l, "10s")
			failed, code = strings.Join(failedChecks(v), "\n"), r.Code
		}
		assert.Equal(t, 4, code)
		assert.Contains(t, failed, "master-0 ignition-fetch: still pending: GET https://api-int."+s.Cluster.Domain()+":22623/config/master")
		assert.Contains(t, failed, "certificate signed by unknown authority")
		assert.Contains(t, failed, "ignition.security.tls.certificateAuthorities")
	})
}

// TestProbeLabTopologies brings up, verifies green and downs a probe lab of
// each topology the spec accepts beyond the 1+3+2 of TestProbeLabLifecycle
// and the 1+1+1 of TestProbeVerifyNamesBrokenThings: a single master and a
// compact three masters without workers, whose masters must serve ingress
// because the load balancer routes 80/443 to them, and three masters with one
// worker, where only the worker does. The labs run one after the other to
// spare the CPUs.
func TestProbeLabTopologies(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		masters, workers int
		ingress          []string // the nodes that serve 80 and 443
	}{
		{1, 0, []string{"master-0"}},
		{3, 0, []string{"master-0", "master-1", "master-2"}},
		{3, 1, []string{"worker-0"}},
	} {
		t.Run(fmt.Sprintf("1+%d+%d", tc.masters, tc.workers), func(t *testing.T) {
			l := newLabWith(t, fmt.Sprintf("topology:\n  masters: %d\n  workers: %d\n", tc.masters, tc.workers))
			mustRun(t, "lab", "up", "-f", l.SpecFile, "--start-workers")
			v, r := verifyJSON(t, l, "8m")
			require.Equal(t, 0, r.Code, "verify failed:\n%s\n%s", strings.Join(failedChecks(v), "\n"), r.Stderr)
			assert.True(t, v.OK)
			assert.Len(t, v.Reports, 1+tc.masters+tc.workers, "a report from every node")

			ok := map[string]bool{}
			var serving, backends []string
			for _, c := range v.Checks {
				ok[c.Group+" "+c.Name] = c.OK
				if c.Name == "serve ingress :80" {
					serving = append(serving, c.Group)
				}
				if c.Group == "host" && strings.HasPrefix(c.Name, "backend ingress-https/") {
					backends = append(backends, strings.TrimPrefix(c.Name, "backend ingress-https/"))
				}
			}
			assert.ElementsMatch(t, tc.ingress, serving, "the nodes whose reports list serve ingress")
			assert.ElementsMatch(t, tc.ingress, backends, "the load balancer's ingress backends")
			for _, n := range tc.ingress {
				for _, want := range []string{n + " serve ingress :80", n + " serve ingress :443", "host backend ingress-http/" + n, "host backend ingress-https/" + n} {
					assert.True(t, ok[want], "check %q is there and ✓", want)
				}
			}
			for m := 0; m < tc.masters; m++ {
				assert.True(t, ok[fmt.Sprintf("master-%d serve api :6443", m)], "master-%d still serves the API", m)
			}

			// Through haproxy, 80 and 443 reach the stand-ins of exactly
			// those nodes (round robin: every one answers in a few requests).
			for _, scheme := range []string{"http", "https"} {
				assert.ElementsMatch(t, tc.ingress, ingressAnswers(t, scheme, l.Gateway(), 4*len(tc.ingress)), "%s answered by", scheme)
			}

			labDown(t, l.LabDir, "-f", l.SpecFile)
			assert.Empty(t, leftovers(t, l))
		})
	}
}

// ingressAnswers sends n requests to the lab's ingress frontend and returns
// the nodes that answered them (each stand-in names itself in a header).
func ingressAnswers(t *testing.T, scheme, addr string, n int) []string {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the stand-in's certificate is self-signed, as a router's default one
	}}
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		resp, err := client.Get(scheme + "://" + addr + "/")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		node := resp.Header.Get(wire.NodeHeader)
		assert.Equal(t, "bootlab probe ingress on "+node+"\n", string(body))
		seen[node] = true
	}
	var out []string
	for node := range seen {
		out = append(out, node)
	}
	return out
}
