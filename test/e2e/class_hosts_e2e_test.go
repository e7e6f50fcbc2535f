//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/labdir"
)

// classUpJSON is what the test reads of `class up -o json`.
type classUpJSON struct {
	Labs []struct {
		Learner string `json:"learner"`
		Lab     string `json:"lab"`
		Host    string `json:"host"`
		Error   string `json:"error"`
	} `json:"labs"`
}

// TestClassHosts is issue 57's evidence: a class of four probe labs over
// two hypervisor hosts reached over SSH only (the simulated remote hosts
// of TestRemoteLab, each its own sshd, libvirtd and directories), placed
// by class config before anything is made, two on each. The second host's
// sshd is stopped while class up builds: the first host's labs are built,
// the second's named failed with their host and why; with sshd back, class
// up again converges, each lab where it was placed, and every lab
// verifies. The second host lost after up: class status shows its labs
// unreachable, class down cleans the first host and names the second;
// once it answers, class down leaves nothing on either.
func TestClassHosts(t *testing.T) {
	// Not parallel: the remote hosts (scripts/host/remote-host.sh) take fixed names and /30s.
	hosts := newRemoteHosts(t, 2)
	rack1, rack2 := hosts[0], hosts[1]
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	name := "h" + hex.EncodeToString(b)
	home := filepath.Join(e2eRoot, name+"-home")
	require.NoError(t, os.MkdirAll(home, 0o755))
	require.NoError(t, os.Chmod(e2eRoot, 0o755))
	setRunEnv(t, "BOOTLAB_HOME", home)
	// Objects bootlab did not make, on each host: a network on rack2 in
	// the pool's first /24 (which no lab of the class takes, on either
	// host) and a domain on rack1. Nothing of the class touches them.
	pool := freePool(t)
	foreign := netip.PrefixFrom(pool.Addr(), 24)
	out, err := rack2.Exec(t, "bash", "-c", fmt.Sprintf(`f=$(mktemp) && echo '<network><name>e2e-foreign</name><bridge name="vfhosts0"/><ip address="%s" netmask="255.255.255.0"/></network>' >"$f" && virsh -c qemu:///system net-define "$f" && virsh -c qemu:///system net-start e2e-foreign; rm -f "$f"`, foreign.Addr().Next()))
	require.NoError(t, err, out)
	out, err = rack1.Exec(t, "bash", "-c", `f=$(mktemp) && echo '<domain type="qemu"><name>e2e-foreign</name><memory unit="MiB">32</memory><vcpu>1</vcpu><os><type arch="x86_64">hvm</type></os></domain>' >"$f" && virsh -c qemu:///system define "$f"; rm -f "$f"`)
	require.NoError(t, err, out)
	file := filepath.Join(home, "class.yaml")
	require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(`name: %s
template:
  profile: probe
  accelerator: tcg
  topology: {masters: 1, workers: 0}
learners: [ann, ben, cat, dan]
addressPool: %s
hosts:
  - name: rack1
    uri: %q
  - name: rack2
    uri: %q
`, name, pool, rack1.URI(), rack2.URI())), 0o644))
	t.Cleanup(func() {
		if len(rack2.processes(t, "sshd")) == 0 {
			rack2.StartSSHD(t) // a failure left it stopped
		}
		if r := run(t, "class", "down", "--name", name, "--yes"); r.Code != 0 {
			t.Errorf("cleanup: class down failed:\n%s", r)
		}
		if !t.Failed() {
			os.RemoveAll(home)
		}
	})

	// The placement, before anything is made: two labs on each host.
	r := mustRun(t, "class", "config", "-f", file, "-o", "json")
	assert.NotContains(t, r.Stdout, `"cidr": "`+foreign.String()+`"`, "no lab takes the range of a network on another host of the class")
	var cfg struct {
		Hosts []struct {
			Name     string   `json:"name"`
			Learners []string `json:"learners"`
			Capacity *struct {
				CPUs int `json:"cpus"`
			} `json:"capacity"`
		} `json:"hosts"`
		Labs []struct {
			Learner string `json:"learner"`
			Host    string `json:"host"`
		} `json:"labs"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &cfg), r.String())
	require.Len(t, cfg.Hosts, 2)
	hostOf := map[string]string{}
	for _, h := range cfg.Hosts {
		assert.Len(t, h.Learners, 2, "spread: two labs on %s", h.Name)
		require.NotNil(t, h.Capacity, "host %s measured over SSH", h.Name)
		assert.Positive(t, h.Capacity.CPUs)
		for _, l := range h.Learners {
			hostOf[l] = h.Name
		}
	}
	r = mustRun(t, "class", "config", "-f", file)
	assert.Contains(t, r.Stdout, fmt.Sprintf("# class %s: 4 labs on 2 hosts, placement spread", name))
	for _, h := range hosts {
		assert.Empty(t, bootlabNetworks(t, h), "class config makes nothing on %s", h.Name)
	}

	// rack2's sshd stops while class up builds: rack1's labs are built,
	// rack2's named failed.
	start := time.Now()
	up := classUpCutting(t, file, rack2)
	upTime := time.Since(start)
	require.NotEqual(t, 0, up.Code, "class up with a host lost must fail:\n%s", up)
	var res classUpJSON
	require.NoError(t, json.Unmarshal([]byte(up.Stdout), &res), up.String())
	require.Len(t, res.Labs, 4)
	failedOn2 := 0
	for _, l := range res.Labs {
		assert.Equal(t, hostOf[l.Learner], l.Host, "learner %s's lab is on the host config showed", l.Learner)
		if l.Host == "rack1" {
			assert.Empty(t, l.Error, "rack1's lab %s is built", l.Lab)
			continue
		}
		if l.Error != "" {
			failedOn2++
			assert.Contains(t, up.Stderr, fmt.Sprintf("%s (learner %s, host rack2): ", l.Lab, l.Learner), "the summary names the learner, the host and why")
		}
	}
	assert.Positive(t, failedOn2, "a lab of rack2 failed with its host gone:\n%s", up)
	assert.Len(t, bootlabNetworks(t, rack1), 2, "rack1 holds its two labs")
	// rack1's two labs were built side by side: the probe kernel and
	// initrd crossed the connection once, the other lab copied them on
	// rack1 (libvirt's volume create-from, over qemu+ssh).
	assert.Contains(t, up.Stderr, "boot files on host rack1: ", "class up says what it sent once")
	assert.Regexp(t, `boot files on host rack1: \d+ uploaded, [1-9]\d* copied there`, up.Stderr)

	// rack2 back: class up again converges, each lab where it was placed.
	rack2.StartSSHD(t)
	up = mustRun(t, "class", "up", "-f", file, "--parallel", "2", "-o", "json")
	res = classUpJSON{} // a field the second run leaves out must not keep the first's
	require.NoError(t, json.Unmarshal([]byte(up.Stdout), &res), up.String())
	uris := map[string]string{"rack1": rack1.URI(), "rack2": rack2.URI()}
	var labs []string
	for _, l := range res.Labs {
		assert.Empty(t, l.Error)
		assert.Equal(t, hostOf[l.Learner], l.Host)
		st, err := labdir.LoadState(filepath.Join(home, "labs", l.Lab))
		require.NoError(t, err)
		require.NotNil(t, st.Spec, "lab %s built", l.Lab)
		assert.Equal(t, uris[l.Host], st.Spec.Libvirt.URI, "lab %s is on its host", l.Lab)
		labs = append(labs, l.Lab)
	}
	for _, h := range hosts {
		assert.Len(t, bootlabNetworks(t, h), 2, "two labs on %s", h.Name)
	}
	readme, err := os.ReadFile(filepath.Join(home, "classes", name, "handouts", "ben", "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "Your lab runs on host "+hostOf["ben"])

	// Every lab verifies, through its host.
	r = runFor(t, 12*time.Minute, "class", "verify", "--name", name, "--timeout", "10m")
	require.Equal(t, 0, r.Code, "class verify:\n%s", r)
	verified := time.Since(start)
	r = mustRun(t, "class", "status", "--name", name)
	assert.Regexp(t, `LEARNER +LAB +HOST +NETWORK +NODES UP`, r.Stdout)
	assert.Regexp(t, `ann +`+name+`-ann +`+hostOf["ann"]+` +\S+ +2/2 +`, r.Stdout)

	// rack2 lost after up: status shows its labs unreachable; down cleans
	// rack1 and names rack2.
	rack2.StopSSHD(t)
	r = mustRun(t, "class", "status", "--name", name)
	assert.Regexp(t, hostOf["ben"]+` +\S+ +unreachable +`, r.Stdout)
	r = run(t, "class", "down", "--name", name, "--yes")
	assert.NotEqual(t, 0, r.Code, "class down with a host lost must fail:\n%s", r)
	assert.Contains(t, r.Stderr, "could not reach host rack2")
	assert.Empty(t, bootlabNetworks(t, rack1), "class down cleans the host that answers")
	for _, l := range labs {
		assert.Empty(t, notForeign(remoteLeftovers(t, rack1, labEnv{Name: l})), "lab %s left on rack1", l)
	}
	rack2.StartSSHD(t)
	mustRun(t, "class", "down", "--name", name, "--yes")
	for _, h := range hosts {
		for _, l := range labs {
			assert.Empty(t, notForeign(remoteLeftovers(t, h, labEnv{Name: l})), "lab %s left on %s", l, h.Name)
			assert.NoDirExists(t, filepath.Join(home, "labs", l))
		}
	}
	assert.NoDirExists(t, filepath.Join(home, "classes", name), "the class's handouts and placement are removed")
	out, err = rack2.Exec(t, "virsh", "-c", "qemu:///system", "net-info", "e2e-foreign")
	assert.NoError(t, err, "class down spares the foreign network on rack2: %s", out)
	out, err = rack1.Exec(t, "virsh", "-c", "qemu:///system", "dominfo", "e2e-foreign")
	assert.NoError(t, err, "class down spares the foreign domain on rack1: %s", out)
	t.Logf("BENCH class of 4 probe labs over 2 remote hosts (qemu+ssh, TCG): class up with a host lost %.1fs; all verified %.1fs after the first up began",
		upTime.Seconds(), verified.Seconds())
}

// notForeign is left without the dnsmasq of the test's own foreign
// network (remoteLeftovers names every dnsmasq of the host).
func notForeign(left []string) []string {
	var out []string
	for _, l := range left {
		if p, ok := strings.CutPrefix(l, "remote process dnsmasq["); ok {
			cmd, _ := os.ReadFile("/proc/" + strings.TrimSuffix(p, "]") + "/cmdline")
			if strings.Contains(string(cmd), "e2e-foreign") {
				continue
			}
		}
		out = append(out, l)
	}
	return out
}

// classUpCutting runs `class up -o json` of file and, once h holds a lab
// network of it (its labs are being built), stops h's sshd.
func classUpCutting(t *testing.T, file string, h *remoteHost) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bootlabBin, "class", "up", "-f", file, "--parallel", "2", "-o", "json")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = bootlabEnv(t)
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	cut := false
	for !cut {
		select {
		case err := <-done:
			t.Fatalf("class up ended (%v) before %s held a lab to cut it off from:\n%s\n%s", err, h.Name, out.String(), errb.String())
		case <-time.After(300 * time.Millisecond):
		}
		if len(bootlabNetworks(t, h)) > 0 {
			h.StopSSHD(t)
			t.Logf("stopped the sshd of %s while class up builds", h.Name)
			cut = true
		}
	}
	err := <-done
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("class up: %v", err)
	}
	return result{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

// bootlabNetworks are the bootlab networks on h, read inside it (its own
// libvirtd, not over SSH: its sshd may be stopped).
func bootlabNetworks(t *testing.T, h *remoteHost) []string {
	t.Helper()
	out, err := h.Exec(t, "virsh", "-c", "qemu:///system", "net-list", "--all", "--name")
	require.NoError(t, err, out)
	var nets []string
	for _, n := range strings.Fields(out) {
		if strings.HasPrefix(n, "bootlab-") {
			nets = append(nets, n)
		}
	}
	return nets
}
