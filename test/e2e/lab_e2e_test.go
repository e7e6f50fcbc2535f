//go:build e2e

package e2e

import (
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/labdir"
)

// TestLabUpStatusDown builds a probe lab of four TCG VMs (bootstrap and three
// masters) on qemu:///system as a user would, checks it with virsh and dig,
// runs up again (nothing to change), and takes it down.
func TestLabUpStatusDown(t *testing.T) {
	parallel(t)
	l := newLabWith(t, "topology:\n  masters: 3\n  workers: 0\n")

	r := mustRun(t, "lab", "up", "-f", l.SpecFile)
	assert.Contains(t, r.Stderr, "accelerator: tcg")

	// The lab's four domains run and carry bootlab metadata.
	nodes := []string{"bootstrap", "master-0", "master-1", "master-2"}
	for _, n := range nodes {
		dom := "bootlab-" + l.Name + "-" + n
		state, err := virsh(t, "domstate", dom)
		require.NoError(t, err, dom)
		assert.Equal(t, "running", strings.TrimSpace(state), dom)
		md, err := virsh(t, "metadata", dom, lab.MetadataNamespace)
		require.NoError(t, err, "metadata of %s", dom)
		assert.Contains(t, md, `name="`+l.Name+`"`)
		assert.Contains(t, md, `node="`+n+`"`)
		x, err := virsh(t, "dumpxml", dom)
		require.NoError(t, err)
		assert.Contains(t, x, "opt/com.coreos/config", "Ignition through fw_cfg")
		assert.Contains(t, x, "<acpi/>")
	}

	// The lab's bridge forwards on every VM's port from the start: no
	// spanning tree holding a new port 4 s in listening and learning.
	info, err := virsh(t, "net-info", "bootlab-"+l.Name)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^Bridge:\s+(\S+)`).FindStringSubmatch(info)
	require.NotNil(t, m, info)
	br := "/sys/class/net/" + m[1]
	stp, err := os.ReadFile(br + "/bridge/stp_state")
	require.NoError(t, err)
	assert.Equal(t, "0", strings.TrimSpace(string(stp)), "STP off on %s", m[1])
	ports, err := filepath.Glob(br + "/brif/*/state")
	require.NoError(t, err)
	assert.Len(t, ports, len(nodes), "one port per VM")
	for _, p := range ports {
		state, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, "3", strings.TrimSpace(string(state)), "%s forwarding (3) right after lab up", p)
	}

	// dnsmasq on the bridge answers every lab name, before any node has booted.
	gw := l.Gateway()
	domain := "ocp.lab.local"
	assert.Equal(t, []string{gw}, dig(t, gw, "api."+domain))
	assert.Equal(t, []string{gw}, dig(t, gw, "api-int."+domain))
	assert.Equal(t, []string{gw}, dig(t, gw, "console-openshift-console.apps."+domain), "*.apps wildcard")
	for i, n := range nodes {
		want := l.CIDR.Addr().As4()
		want[3] = byte(10 + i) // bootstrap .10, masters .11-.13
		assert.Equal(t, []string{netip.AddrFrom4(want).String()}, dig(t, gw, n+"."+domain), n)
	}

	// A second up changes nothing and says so.
	r = mustRun(t, "lab", "up", "-f", l.SpecFile)
	assert.Contains(t, r.Stderr, "nothing to change")

	// status -o json reports the network, DNS and every node running.
	r = mustRun(t, "lab", "status", "-f", l.SpecFile, "-o", "json")
	var st lab.Status
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &st), r.Stdout)
	assert.True(t, st.Network.Active)
	assert.Contains(t, st.DNS, lab.DNSRecord{Name: "api." + domain, IP: gw})
	require.Len(t, st.Nodes, 4)
	for _, n := range st.Nodes {
		assert.Equal(t, "running", n.State, n.Name)
	}
	require.NotNil(t, st.LoadBalancer, "load balancer status: %s", st.LoadBalancerError)
	assert.True(t, st.LoadBalancer.Running)

	// The serial console log exists and `lab console --no-follow` prints it.
	r = mustRun(t, "lab", "console", "-f", l.SpecFile, "--no-follow", "bootstrap")
	_ = r // the content depends on how far the VM booted; the command must work

	// down leaves no bootlab object of this lab and no lab state.
	labDown(t, l.LabDir, "-f", l.SpecFile)
	assert.Empty(t, leftovers(t, l))
	_, err = os.Stat(labdir.StatePath(l.Dir + "/lab"))
	assert.True(t, os.IsNotExist(err), "lab state removed")
}

// TestLabDownSparesForeignObjects: a network and a domain that bootlab did
// not create, even one named like the lab's, survive `lab down`.
func TestLabDownSparesForeignObjects(t *testing.T) {
	parallel(t)
	l := newLabWith(t, "topology:\n  masters: 1\n  workers: 0\n")
	mustRun(t, "lab", "up", "-f", l.SpecFile)

	dir := t.TempDir()
	foreignDom := "bootlab-" + l.Name + "-foreign"
	domXML := dir + "/dom.xml"
	require.NoError(t, os.WriteFile(domXML, []byte(`<domain type="qemu"><name>`+foreignDom+`</name><memory unit="MiB">64</memory><os><type arch="x86_64" machine="q35">hvm</type></os></domain>`), 0o644))
	_, err := virsh(t, "define", domXML)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = virsh(t, "undefine", foreignDom) })

	foreignNet := "h1foreign-" + l.Name
	netXML := dir + "/net.xml"
	require.NoError(t, os.WriteFile(netXML, []byte(`<network><name>`+foreignNet+`</name></network>`), 0o644))
	_, err = virsh(t, "net-define", netXML)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = virsh(t, "net-undefine", foreignNet) })

	labDown(t, l.LabDir, "-f", l.SpecFile)
	_, err = virsh(t, "dominfo", foreignDom)
	assert.NoError(t, err, "foreign domain survives down")
	_, err = virsh(t, "net-info", foreignNet)
	assert.NoError(t, err, "foreign network survives down")
	left := leftovers(t, l)
	assert.Equal(t, []string{"list:" + foreignDom}, left)
}

// TestLabUpResumesAfterInterrupt interrupts `lab up` (SIGINT, as Ctrl-C)
// once its network exists, then runs up again: the lab converges, and down
// leaves nothing.
func TestLabUpResumesAfterInterrupt(t *testing.T) {
	parallel(t)
	l := newLabWith(t, "topology:\n  masters: 3\n  workers: 0\n")
	cmd := exec.Command(bootlabBin, "lab", "up", "-f", l.SpecFile)
	cmd.Env = bootlabEnv(t)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	net := "bootlab-" + l.Name
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var waitErr error
	interrupted := false
poll:
	for {
		select {
		case waitErr = <-exited:
			break poll
		default:
		}
		if _, err := virsh(t, "net-info", net); err == nil && !interrupted {
			require.NoError(t, cmd.Process.Signal(os.Interrupt))
			interrupted = true
		}
	}
	t.Logf("first up: interrupted=%v, result %v\n%s", interrupted, waitErr, stderr.String())
	if ee, ok := waitErr.(*exec.ExitError); ok {
		assert.Equal(t, 130, ee.ExitCode(), "an interrupted up exits 130:\n%s", stderr.String())
	} else {
		require.NoError(t, waitErr) // it finished before the signal landed
	}

	r := mustRun(t, "lab", "up", "-f", l.SpecFile)
	assert.NotContains(t, r.Stderr, "nothing to change", "the second up finishes the interrupted one")
	for _, n := range []string{"bootstrap", "master-0", "master-1", "master-2"} {
		state, err := virsh(t, "domstate", "bootlab-"+l.Name+"-"+n)
		require.NoError(t, err)
		assert.Equal(t, "running", strings.TrimSpace(state), n)
	}
	labDown(t, l.LabDir, "-f", l.SpecFile)
	assert.Empty(t, leftovers(t, l))
}

// TestLabDownKeepImages: `down --keep-images` keeps the uploaded base image,
// the next `up` does not upload it again, and a plain down removes it.
func TestLabDownKeepImages(t *testing.T) {
	parallel(t)
	l := newLabWith(t, "topology:\n  masters: 1\n  workers: 0\n")
	r := mustRun(t, "lab", "up", "-f", l.SpecFile)
	assert.Contains(t, r.Stderr, "Importing base image base.qcow2: uploaded")
	labDown(t, l.LabDir, "--keep-images", "-f", l.SpecFile)
	assert.FileExists(t, l.Dir+"/pool/base.qcow2")
	assert.Empty(t, leftovers(t, l), "no libvirt object is kept, only the file")

	r = mustRun(t, "lab", "up", "-f", l.SpecFile)
	assert.NotContains(t, r.Stderr, "Importing base image base.qcow2: uploaded", "the kept image is not uploaded again")
	labDown(t, l.LabDir, "-f", l.SpecFile)
	assert.NoDirExists(t, l.Dir+"/pool")
	assert.Empty(t, leftovers(t, l))
}
