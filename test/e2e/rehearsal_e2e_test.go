//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/cache"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/release"
)

// rehearseLab is the rehearsal half of TestClass, on its rehearsal
// learner's lab l (built by `class up` from a probe template with
// openshift.manualBootstrap; the commands name it by its handout's spec):
// `lab up` on it changes nothing and names the next step; its bootstrap
// node (1.5 GiB, the rehearsal initrd) serves SSH with the lab's key and
// a host key made on the host: `lab ssh bootstrap` runs real bash as
// core, sudo -n makes it root, real jq and etcd are there, and `stage
// status` reads the node over the stage transport. The stages run one by
// one, and after 07, 12, 13 and 14 the test checks their effect from
// outside: the etcd membership (1, then 1+masters once stage 13's API
// answers, then masters once the etcd operator stand-in removed the
// bootstrap member), the masters' Ignition fetch, the bootstrap's 22623
// and 6443. Then `stage run --all` and `stage validate --all` pass, pivot,
// verify all ✓. It logs the nodes' memory use and the initrd size (BENCH
// lines); start is when `class up` began.
//
// It was TestRehearsalLab, a lab of its own beside the class's: the two
// ran the same fifteen stages with a real control plane each, 13% of the
// e2e run's CPU for the class's copy alone, and the class ran first,
// alone, with the cores a third idle (docs/benchmarks.md).
func rehearseLab(t *testing.T, l labEnv, masters int, start time.Time, cpu *guestCPULedger) {
	// Not a t.Helper: a failure and a BENCH line name their line here.
	up := mustRun(t, "lab", "up", "-f", l.SpecFile, "--manual-bootstrap")
	assert.Contains(t, up.Stderr, "nothing to change", "lab up of a class's lab from its handout spec changes nothing")
	assert.Contains(t, up.Stderr, "bootlab stage run 01", "lab up names the next step of a rehearsal lab")

	s := loadSpec(t, l)
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	require.True(t, st.Spec.Rehearsal(), "the lab state records the rehearsal")
	bs, _ := st.Spec.Node("bootstrap")
	var xml string
	assert.Equal(t, spec.RehearsalBootstrapMemoryMiB, bs.MemoryMiB)
	xml, err = virsh(t, "dumpxml", st.Spec.DomainName(bs))
	require.NoError(t, err)
	assertBootsInitrd(t, xml, st.Spec.Image.RehearsalInitrd, "the rehearsal bootstrap boots the rehearsal initrd")
	m0, _ := st.Spec.Node("master-0")
	mxml, err := virsh(t, "dumpxml", st.Spec.DomainName(m0))
	require.NoError(t, err)
	assertBootsInitrd(t, mxml, st.Spec.Image.RehearsalInitrd, "masters run real etcd: they boot the rehearsal initrd")
	assert.Equal(t, spec.RehearsalMasterMemoryMiB, m0.MemoryMiB)

	// The node is up when lab ssh gets through.
	var r result
	deadline := time.Now().Add(3 * time.Minute)
	for {
		r = run(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "true")
		if r.Code == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(3 * time.Second)
	}
	require.Equal(t, 0, r.Code, "lab ssh bootstrap -- true never succeeded:\n%s", r)
	t.Logf("BENCH rehearsal lab: class up -> the rehearsal bootstrap answers ssh %.1fs", time.Since(start).Seconds())

	// The release's own etcd (lab/release), not Debian's 3.4.
	pins, err := release.For(lab.OpenShiftVersion(st.Spec))
	require.NoError(t, err)
	etcdVersion := pins.Etcd.Module
	require.True(t, strings.HasPrefix(etcdVersion, "3.5."), "the default release runs etcd 3.5, got %s", etcdVersion)
	r = mustRun(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", `id -un; sudo -n id -u; echo '{"a":1}' | jq .a; etcd --version | head -1; etcdctl version | head -1; uname -n`)
	assert.Equal(t, "core\n0\n1\netcd Version: "+etcdVersion+"\netcdctl version: "+etcdVersion+"\nbootstrap\n", r.Stdout)
	r = run(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "exit 5")
	assert.Equal(t, 5, r.Code, "the remote exit status comes back")
	r = run(t, "lab", "ssh", "-f", l.SpecFile, "master-0", "--", "true")
	assert.NotEqual(t, 0, r.Code)
	assert.Contains(t, r.Stderr, "only its bootstrap node runs an SSH server")

	// The host key is the lab's, recorded in the lab's known_hosts.
	hk, err := os.ReadFile(labdir.RehearsalHostKey(st.Spec))
	require.NoError(t, err)
	signer, err := ssh.ParsePrivateKey(hk)
	require.NoError(t, err)
	kh, err := os.ReadFile(st.Spec.LabDir + "/ssh/known_hosts")
	require.NoError(t, err)
	assert.Contains(t, string(kh), strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))))

	// stage status over the stage transport (core + sudo -n, TOFU).
	r = mustRun(t, "stage", "status", "-f", l.SpecFile, "-o", "json")
	var status struct {
		Node   string `json:"node"`
		Next   string `json:"next"`
		Stages []struct {
			Number int    `json:"number"`
			State  string `json:"state"`
		} `json:"stages"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &status), r.String())
	assert.Equal(t, "core@"+bs.IP+":22", status.Node)
	assert.Len(t, status.Stages, 15)
	assert.True(t, strings.HasPrefix(status.Next, "01"), "nothing ran yet: next is stage 01, got %q", status.Next)

	// Stages 01 to 07 run for real over SSH: the podman and oc stand-ins
	// answer image_for and render, and when stage 07 lands the etcd member
	// pod the kubelet stand-in starts real etcd; stage validate 07 runs the
	// same Go checks as on a real node (etcd health over TLS included).
	// Stage 07 runs, is reset to its before-07 checkpoint and runs again.
	r = mustRun(t, "stage", "run", "-f", l.SpecFile, "--from", "01", "--to", "06")
	assert.Contains(t, r.Stderr, "stand-in", "the stand-ins say what they are")
	stageResetRoundTrip(t, l)
	// The kubelet stand-in notices the manifest within a second; etcd then
	// needs a moment under TCG, as on a real node: stage validate waits for
	// it (--wait, 1m by default), as a learner's does.
	ran07 := time.Now()
	r = run(t, "stage", "validate", "-f", l.SpecFile, "07")
	require.Equal(t, 0, r.Code, "stage validate 07:\n%s", r)
	assert.Contains(t, r.Stdout+r.Stderr, "etcd is the release's minor", "stage validate 07 checks the etcd version")
	cpu.phase("boot to 07 validated (the bootstrap from its before-07 restore)")
	t.Logf("BENCH rehearsal stage 07: stage validate 07 ✓ (etcd %s healthy) %.1fs after stage run 07 returned", etcdVersion, time.Since(ran07).Seconds())
	r = mustRun(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", `sudo -n bash -c 'for p in /proc/[0-9]*; do if [ "$(cat $p/comm 2>/dev/null)" = etcd ]; then grep VmRSS $p/status; fi; done'`)
	t.Logf("BENCH rehearsal bootstrap etcd (1 member): %s", strings.Join(strings.Fields(r.Stdout), " "))
	etcdctl := "sudo -n etcdctl --cacert=/opt/openshift/tls/etcd-ca-bundle.crt --cert=/opt/openshift/tls/etcd-client.crt --key=/opt/openshift/tls/etcd-client.key --endpoints=https://localhost:2379 "
	// As bootkube's wait_for_etcd_cluster, retry while the new member
	// settles (a loaded TCG host slows its first raft commits).
	for i := 0; i < 12; i++ {
		if r = run(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", etcdctl+"--command-timeout=20s endpoint health"); r.Code == 0 {
			break
		}
		time.Sleep(5 * time.Second)
	}
	if r.Code != 0 {
		logs := run(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "sudo -n crictl logs --tail 30 etcd 2>&1; sudo -n crictl ps -a")
		t.Fatalf("etcdctl endpoint health never succeeded:\n%s\netcd's log:\n%s", r, logs)
	}
	assert.Contains(t, r.Stdout+r.Stderr, "is healthy")
	// memberList asks any member that answers, as the masters join and
	// the bootstrap's leaves.
	endpoints := "https://localhost:2379"
	var masterNodes []spec.Node
	for _, n := range st.Spec.NodesByRole(spec.RoleMaster) {
		endpoints += ",https://" + n.IP + ":2379"
		masterNodes = append(masterNodes, n)
	}
	require.Len(t, masterNodes, masters)
	memberList := func() []string {
		r := run(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", strings.Replace(etcdctl, "--endpoints=https://localhost:2379", "--endpoints="+endpoints, 1)+"member list")
		if r.Code != 0 {
			return nil
		}
		return strings.Split(strings.TrimSpace(r.Stdout), "\n")
	}
	waitMembers := func(n int, why string) []string {
		var ms []string
		for deadline := time.Now().Add(4 * time.Minute); time.Now().Before(deadline); time.Sleep(3 * time.Second) {
			if ms = memberList(); allStartedVoters(ms, n) {
				break
			}
		}
		require.Len(t, ms, n, "%s: etcdctl member list from the bootstrap:\n%s", why, strings.Join(ms, "\n"))
		t.Logf("etcd members (%s):\n%s", why, strings.Join(ms, "\n"))
		return ms
	}
	ms := waitMembers(1, "after stage 07")
	assert.Contains(t, ms[0], "etcd-bootstrap")
	// The dashboard's etcd card: the bootstrap's member alone, from the
	// bootstrap's own report (the masters have no config yet).
	dash, _ := startDashboard(t, dashboardHome(t, l, s), "127.0.0.1:0")
	assertDashboardEtcd(t, dash, l.Name, "bootstrap", []string{"etcd-bootstrap@bootstrap"})
	r = mustRun(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "sudo -n crictl ps")
	assert.Contains(t, r.Stdout, "etcd-bootstrap-member")

	// Stages 08 to 11 render the rest of the temporary control plane.
	mustRun(t, "stage", "run", "-f", l.SpecFile, "--from", "08", "--to", "11")
	r = run(t, "stage", "validate", "-f", l.SpecFile, "08", "09", "10", "11")
	require.Equal(t, 0, r.Code, "stage validate 08 09 10 11:\n%s", r)
	assertBootstrapPodFlags(t, func(p string) string {
		return mustRun(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "sudo -n cat "+p).Stdout
	}, lab.OpenShiftVersion(st.Spec))
	r = mustRun(t, "stage", "status", "-f", l.SpecFile, "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &status), r.String())
	assert.True(t, strings.HasPrefix(status.Next, "12"), "after 11 the next stage is 12, got %q", status.Next)

	// Until stage 12 nothing serves 22623: master-0 retries its pointer
	// config. Stage 12 lands the bootstrap MCO pod, the kubelet stand-in
	// starts the MCS, and master-0 gets its config.
	fetch := func() (ok, pending bool, detail string) {
		f, err := os.Open(labdir.ConsoleLog(st.Spec, m0))
		require.NoError(t, err)
		defer f.Close()
		rep, err := wire.ParseConsole(f)
		if err != nil || rep == nil {
			return false, true, fmt.Sprint(err)
		}
		for _, c := range rep.Checks {
			if c.Name == "ignition-fetch" {
				return c.OK, c.Pending, c.Detail
			}
		}
		return false, true, "no ignition-fetch check yet"
	}
	ok, pending, detail := fetch()
	assert.True(t, !ok && pending, "before stage 12 master-0 still retries its pointer config: %s", detail)
	r = mustRun(t, "stage", "run", "-f", l.SpecFile, "12")
	r = run(t, "stage", "validate", "-f", l.SpecFile, "12")
	require.Equal(t, 0, r.Code, "stage validate 12:\n%s", r)
	deadline = time.Now().Add(3 * time.Minute)
	for {
		if ok, _, detail = fetch(); ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(3 * time.Second)
	}
	assert.True(t, ok, "after stage 12 master-0 fetched its config through the load balancer from the bootstrap MCS: %s", detail)
	nodeCheck := func(n spec.Node, name string) string {
		f, err := os.Open(labdir.ConsoleLog(st.Spec, n))
		require.NoError(t, err)
		defer f.Close()
		rep, _ := wire.ParseConsole(f)
		if rep != nil {
			for _, c := range rep.Checks {
				if c.Name == name {
					return fmt.Sprintf("ok=%v %s", c.OK, c.Detail)
				}
			}
		}
		return "no " + name + " check"
	}
	etcdCheck := func(n spec.Node) string { return nodeCheck(n, "etcd member") }
	// The member list can show a change a report interval before the
	// master's agent has seen it on its own etcd and said so: wait for the
	// agent's report, not only for the list.
	waitEtcdCheck := func(n spec.Node, want string) string {
		got := etcdCheck(n)
		for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(got, want) && time.Now().Before(deadline); got = etcdCheck(n) {
			time.Sleep(3 * time.Second)
		}
		return got
	}
	// The etcd operator is a pod of the cluster: no master joins etcd
	// before stage 13's API answers, so after stage 12 etcd is still the
	// bootstrap's member alone, and each master's etcd check says why.
	for _, n := range masterNodes {
		assert.Contains(t, waitEtcdCheck(n, "waiting for the cluster's API"), "waiting for the cluster's API (stage 13 starts the bootstrap's)", n.Name)
	}
	ms = memberList()
	require.Len(t, ms, 1, "after stage 12 etcd is the bootstrap's member alone:\n%s", strings.Join(ms, "\n"))
	assert.Contains(t, ms[0], "etcd-bootstrap")
	// Every member is the pinned etcd: the masters boot the same initrd
	// and have no SSH, so ask their servers (theirs after stage 13).
	etcdVersions := func(endpoints string, n int) {
		t.Helper()
		// Retried as the health check above: after stage 13 the masters
		// run their kube-apiservers beside etcd on one emulated vCPU, and
		// a member may miss etcdctl's deadline for a while.
		var r result
		for i := 0; i < 12; i++ {
			if r = run(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", strings.Replace(etcdctl, "--endpoints=https://localhost:2379", "--endpoints="+endpoints, 1)+"--command-timeout=20s endpoint status -w json"); r.Code == 0 {
				break
			}
			time.Sleep(5 * time.Second)
		}
		require.Equal(t, 0, r.Code, "etcdctl endpoint status at %s:\n%s", endpoints, r)
		var statuses []struct {
			Endpoint string `json:"Endpoint"`
			Status   struct {
				Version string `json:"version"`
			} `json:"Status"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &statuses), r.String())
		require.Len(t, statuses, n, r.Stdout)
		for _, es := range statuses {
			assert.Equal(t, etcdVersion, es.Status.Version, "etcd server version at %s", es.Endpoint)
		}
	}
	etcdVersions("https://localhost:2379", 1)

	// Until stage 13 nothing answers 6443 on the bootstrap. Stage 13 waits
	// for etcd for real (etcdctl endpoint health), cluster-bootstrap lands
	// the temporary control plane, the kubelet stand-in runs the release's
	// kube-apiserver, controller manager and scheduler, cluster-bootstrap
	// creates every manifest through that API (the test's own among them)
	// beside its required-pods wait, says which required pods a rehearsal
	// lab does not run, sends bootstrap-success and bootstrap-finished and
	// tears the control plane down. kube-system/bootstrap is not its work:
	// progress.service writes it after stage 15.
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(bs.IP, "6443"), 5*time.Second); err == nil {
		c.Close()
		t.Errorf("want nothing on the bootstrap's 6443 before stage 13; it accepted a connection")
	}
	mustRun(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "sudo -n tee /opt/openshift/manifests/99_bootlab-e2e-stage13.yaml >/dev/null <<'EOF'\n"+stage13Object+"EOF")
	kubectl := hostKubectl(t, l, st.Spec)
	cpu.phase("07 validated to 13 begun")
	ran13 := time.Now()
	realAPI := make(chan string, 1)
	go func() { realAPI <- waitRealAPIThroughLB(kubectl, pins.Kubernetes, 20*time.Minute) }()
	// Once stage 13's API answers, each master is added as a learner and
	// promoted (1 -> 1+masters), seen from the bootstrap and on the dashboard's
	// etcd card while the stage runs: the bootstrap's member stays until
	// after stage 15.
	done13 := make(chan struct{})
	joined := make(chan joinedDuring13, 1)
	wantCard := append([]string{"etcd-bootstrap@bootstrap"}, memberAtNode(masterNodes)...)
	slices.Sort(wantCard)
	go func() { joined <- watchJoinsDuring13(memberList, dash, l.Name, wantCard, done13) }()
	// Stage 13 waits up to 20 minutes for the bootstrap API, as
	// cluster-bootstrap: under TCG on a loaded host it needed more than
	// the harness's 10 minutes (docs/rehearsal-lab.md).
	r = runFor(t, 30*time.Minute, "stage", "run", "-f", l.SpecFile, "13")
	close(done13)
	require.Equal(t, 0, r.Code, "stage run 13:\n%s", r)
	t.Logf("BENCH rehearsal stage 13: %.1fs with the real temporary control plane", time.Since(ran13).Seconds())
	cpu.phase("stage 13")
	logNodeCPU(t, "rehearsal after stage 13:", st.Spec)
	j := <-joined
	require.Len(t, j.members, masters+1, "during stage 13 every master joined etcd and votes beside the bootstrap's member (last list seen %s after the stage began):\n%s", j.after, strings.Join(j.members, "\n"))
	t.Logf("etcd members (during stage 13, %s after it began, every master joined):\n%s", j.after.Round(time.Second), strings.Join(j.members, "\n"))
	for _, n := range masterNodes {
		assert.Contains(t, strings.Join(j.members, "\n"), n.Name+", https://"+n.IP+":2380")
	}
	assert.Contains(t, strings.Join(j.members, "\n"), "etcd-bootstrap")
	// The dashboard's etcd card showed the same members, each on its
	// node, from the masters' console reports.
	assert.Equal(t, wantCard, j.card, "the dashboard's etcd card during stage 13: %s", j.cardWhy)
	assert.Equal(t, 1, j.leaders, "one leader among %v", j.card)
	for _, n := range masterNodes {
		assert.Contains(t, waitEtcdCheck(n, "ok=true"), "ok=true", n.Name)
	}
	etcdVersions(strings.TrimPrefix(endpoints, "https://localhost:2379,"), masters)
	out := r.Stdout + r.Stderr
	for _, want := range []string{"Waiting up to 20m0s for the Kubernetes API", "API is up", `Created "bootlab-crds/`, "failed 0",
		"\tPod Status:openshift-kube-apiserver/kube-apiserver\t", "Sending bootstrap-success event.", "Sending bootstrap-finished event.",
		"Tearing down temporary bootstrap control plane"} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "ConfigMap kube-system/bootstrap", "cluster-bootstrap does not write it (report-progress.sh does, after stage 15)")
	assert.NotContains(t, out, "no real kube-apiserver", "a rehearsal bootstrap runs the release's kube-apiserver")
	select {
	case got := <-realAPI:
		assert.Contains(t, got, "ok: ", "the real API answered through the load balancer during stage 13: %s", got)
		t.Logf("the real bootstrap API through the load balancer during stage 13: %s", got)
	case <-time.After(time.Minute):
		t.Errorf("no answer from the real API through the load balancer during stage 13")
	}
	r = run(t, "stage", "validate", "-f", l.SpecFile, "13")
	require.Equal(t, 0, r.Code, "stage validate 13:\n%s", r)
	// cluster-bootstrap's bootstrap-success event, through the masters' API.
	ev, err := kubectl("get", "event", "-n", "kube-system", "bootstrap-success", "-o", "jsonpath={.message}")
	require.NoError(t, err, ev)
	assert.Equal(t, "Required control plane pods have been created", ev, "the bootstrap-success event after stage 13")
	// lab gather writes bootlab's bundle of the rehearsal (issue 55), and
	// lab diagnose reads it: a diagnosis, not "no bundle" (exit 3).
	gathered := time.Now()
	r = mustRun(t, "lab", "gather", "-f", l.SpecFile)
	t.Logf("BENCH lab gather after stage 13: %.1fs", time.Since(gathered).Seconds())
	bundle := strings.TrimSpace(r.Stdout)
	if fi, err := os.Stat(bundle); assert.NoError(t, err, "lab gather prints the bundle's path") {
		t.Logf("BENCH lab gather bundle after stage 13: %d KiB", fi.Size()>>10)
	}
	assert.Contains(t, r.Stderr, "gathered bootstrap", "a progress line per node")
	r = run(t, "lab", "diagnose", "--bundle", bundle)
	assert.Contains(t, []int{0, 4}, r.Code, "lab diagnose reads lab gather's bundle:\n%s", r)
	t.Logf("lab diagnose of the bundle after stage 13:\n%s", r.Stdout)
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(bs.IP, "6443"), 5*time.Second); err == nil {
		c.Close()
		t.Errorf("want nothing on the bootstrap's 6443 once cluster-bootstrap tore the temporary control plane down (stage validate 13 passed); it accepted a connection")
	}
	// The test's object, created through the bootstrap API, is in etcd
	// (at OpenShift's prefix, in protobuf): what the masters' members
	// replicate and their API servers serve after stage 14.
	r = mustRun(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", strings.Replace(etcdctl, "--endpoints=https://localhost:2379", "--endpoints="+endpoints, 1)+"get --keys-only "+stage13Key)
	assert.Contains(t, r.Stdout, stage13Key, "the object created through the bootstrap API at stage 13 is in etcd")

	// Stage 14: oc patch clusterversion reaches the masters' real API,
	// the bootstrap MCS stops, and wait-for-ceo returns once the etcd
	// operator stand-in reports EtcdRunningInCluster, with the bootstrap
	// member still a member (cluster-etcd-operator waitforceo.go): it goes
	// only after stage 15.
	r = mustRun(t, "stage", "run", "-f", l.SpecFile, "14")
	out = r.Stdout + r.Stderr
	assert.Contains(t, out, "clusterversion.config.openshift.io/version patched")
	assert.Contains(t, out, "Cluster etcd operator bootstrapped successfully (EnoughEtcdMembers")
	ms = memberList()
	assert.Len(t, ms, masters+1, "after stage 14 the bootstrap member is still a member:\n%s", strings.Join(ms, "\n"))
	assert.Contains(t, strings.Join(ms, "\n"), "etcd-bootstrap", "after stage 14 the bootstrap member is still a member")
	assert.Contains(t, waitEtcdCheck(masterNodes[0], "bootstrap teardown:"), "bootstrap teardown:", "master-0 plays the bootstrap teardown")
	// Stage 14 removes the MCS's static pod manifest, as bootkube does; the
	// kubelet stops the pod when it next reads the directory, with a grace
	// period (the stand-in: within a second, then up to 10 s of SIGTERM):
	// the port closes some seconds later, not when the stage returns. A
	// single look right after the stage failed twice in CI.
	if took, ok := waitPortClosed(net.JoinHostPort(bs.IP, "22623"), mcsStopDeadline); ok {
		t.Logf("the bootstrap MCS stopped answering 22623 %.1fs after the checks that follow stage 14", took.Seconds())
	} else {
		t.Errorf("want the bootstrap MCS gone after stage 14 removed its pod; 22623 still accepted connections %s later", mcsStopDeadline)
	}
	// The masters joined through the CSR flow during stage 13 (approve-csr
	// on the bootstrap approved, its controller manager signed): stage
	// validate 14 requires them registered and Ready.
	assertMastersServeTheAPI(t, l, masterNodes, func(n spec.Node) string { return labdir.ConsoleLog(st.Spec, n) })
	mustRun(t, "stage", "validate", "-f", l.SpecFile, "14")
	// Did a control-plane program exit (leader election lost, an etcd
	// check, ...) and the kubelet stand-in restart it, from stage 13 to
	// here? Measured, not asserted: the stages completed either way.
	for _, n := range st.Spec.Nodes {
		if n.Role == spec.RoleBootstrap || n.Role == spec.RoleMaster {
			logControlPlaneExits(t, n.Name, labdir.ConsoleLog(st.Spec, n))
		}
	}
	assertServiceNetwork(t, kubectl, st.Spec, masterNodes)
	// The control plane has moved: what is left of the test mostly waits,
	// so the short tests may start beside it.
	lendLanes(t)

	// Stage 15 checks the API names through the load balancer (the
	// masters answer) and writes .bootkube.done; then --all has nothing
	// left but the unmarked steps, and passes, stage 14 included.
	mustRun(t, "stage", "run", "-f", l.SpecFile, "15")
	mustRun(t, "stage", "validate", "-f", l.SpecFile, "15")
	// After .bootkube.done progress.service creates kube-system/bootstrap
	// through api-int, and the etcd operator's teardown removes the
	// bootstrap member (1+masters -> masters).
	ms = waitMembers(masters, "after stage 15, the bootstrap member is removed")
	assert.NotContains(t, strings.Join(ms, "\n"), "etcd-bootstrap")
	assertDashboardEtcd(t, dash, l.Name, "master-", memberAtNode(masterNodes))
	assert.Contains(t, waitEtcdCheck(masterNodes[0], "removed the etcd-bootstrap member"), "removed the etcd-bootstrap member", "master-0's teardown removed it")
	// Then each master's kube-apiserver gets a revision whose --etcd-servers
	// no longer name the bootstrap (the endpoint observer), and serves it.
	for _, n := range masterNodes {
		got := nodeCheck(n, "serve api :6443")
		for deadline := time.Now().Add(6 * time.Minute); !strings.Contains(got, "ok=true real kube-apiserver (the release's, from the installer stand-in's pod) revision 2 ready") && time.Now().Before(deadline); got = nodeCheck(n, "serve api :6443") {
			time.Sleep(3 * time.Second)
		}
		assert.Contains(t, got, "revision 2 ready", "%s: a revision without etcd-bootstrap", n.Name)
		assert.NotContains(t, got, "https://"+bs.IP+":2379", "%s: revision 2's etcd servers", n.Name)
		t.Logf("BENCH rehearsal %s after the bootstrap member's removal: %s", n.Name, got)
	}
	// The masters' kube-apiserver and controller manager run with the
	// FeatureGate's gates the release's Kubernetes knows, read from the
	// API as the operators' feature-gate accessor reads them (issue 54).
	for _, ns := range []string{"openshift-kube-apiserver", "openshift-kube-controller-manager"} {
		pods, err := kubectl("get", "pods", "-n", ns, "-o", `jsonpath={range .items[*]}{.metadata.name}{" "}{.spec.containers[0].command}{.spec.containers[0].args}{"\n"}{end}`)
		require.NoError(t, err, pods)
		seen := 0
		for _, line := range strings.Split(strings.TrimSpace(pods), "\n") {
			name, argv, _ := strings.Cut(line, " ")
			if !strings.Contains(name, "master-") {
				continue
			}
			seen++
			assert.Contains(t, argv, "--feature-gates=", "%s/%s runs with the FeatureGate's gates", ns, name)
		}
		assert.Positive(t, seen, "%s has the masters' mirror pods:\n%s", ns, pods)
	}
	cm, err := kubectl("get", "configmap", "-n", "kube-system", "bootstrap", "-o", "jsonpath={.data.status}")
	require.NoError(t, err, cm)
	assert.Equal(t, "complete", cm, "progress.service's ConfigMap")
	all := mustRun(t, "stage", "run", "--all", "-f", l.SpecFile)
	assert.NotContains(t, all.Stderr, "not rehearsed")
	r = run(t, "stage", "validate", "--all", "-f", l.SpecFile)
	require.Equal(t, 0, r.Code, "stage validate --all:\n%s", r)
	// Before the pivot the bootstrap's backends are down, as a real
	// bootstrap's are once it is done: verify says so at once, pending on
	// `lab pivot`, not a wait that ends in exit 4 (issue 59).
	pre, pr := verifyJSON(t, l, "3m")
	require.Equal(t, 0, pr.Code, "verify after stage 15, before the pivot:\n%s\n%s", strings.Join(failedChecks(pre), "\n"), pr.Stderr)
	waiting := 0
	for _, c := range pre.Checks {
		if strings.HasPrefix(c.Name, "backend ") && strings.HasSuffix(c.Name, "/bootstrap") && c.State != "passed" {
			assert.Equal(t, "pending", c.State, "%s: %s", c.Name, c.Detail)
			assert.Contains(t, c.Fix, "bootlab lab pivot", c.Name)
			waiting++
		}
	}
	assert.Positive(t, waiting, "the bootstrap's backends wait for the pivot")
	t.Logf("BENCH verify after stage 15, before the pivot: %.1f s, %d bootstrap backends pending on lab pivot", float64(pre.Elapsed)/1000, waiting)

	// lab pivot takes the bootstrap out of the load balancer; then verify
	// is all ✓, the API and the MCS answered by the master only.
	mustRun(t, "lab", "pivot", "-f", l.SpecFile)
	v, vr := verifyJSON(t, l, "3m")
	require.Equal(t, 0, vr.Code, "verify after pivot:\n%s\n%s", strings.Join(failedChecks(v), "\n"), vr.Stderr)
	for _, c := range v.Checks {
		if c.Name == "lb api :6443" || c.Name == "lb machine-config :22623" {
			assert.NotContains(t, c.Detail, "bootstrap", c.Name)
		}
	}

	// The dashboard says who serves the API and the MCS now: the masters
	// only, as haproxy sees them after the pivot.
	onlyMasters := func(xs []string) bool {
		for _, x := range xs {
			if !strings.HasPrefix(x, "master-") {
				return false
			}
		}
		return len(xs) > 0
	}
	sv := waitLabView(t, dash, l.Name, func(v labView) bool { return onlyMasters(v.Serving.API) && onlyMasters(v.Serving.MCS) })
	t.Logf("the dashboard after the pivot: API served by %v, MCS by %v", sv.Serving.API, sv.Serving.MCS)

	// Every node's agent checked its clock against the RTC once (a TSC
	// calibrated wrongly at boot runs the clock fast; the agent mends it
	// and says so).
	for _, n := range st.Spec.Nodes {
		data, err := os.ReadFile(labdir.ConsoleLog(st.Spec, n))
		require.NoError(t, err)
		line := regexp.MustCompile(`(?m)^.*msg="?clock.*$`).FindString(string(data))
		assert.NotEmpty(t, line, "%s's agent checked its clock", n.Name)
		t.Logf("%s: %s", n.Name, line)
	}

	// Memory in use on the node (etcd running) and the initrd it booted.
	r = mustRun(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "grep -E '^(MemTotal|MemAvailable):' /proc/meminfo | tr -s ' ' | cut -d' ' -f2")
	f := strings.Fields(r.Stdout)
	require.Len(t, f, 2, r.String())
	total, _ := strconv.Atoi(f[0])
	avail, _ := strconv.Atoi(f[1])
	fi, err := os.Stat(st.Spec.Image.RehearsalInitrd)
	require.NoError(t, err)
	t.Logf("BENCH rehearsal bootstrap: %d MiB in use of %d MiB (MemTotal-MemAvailable), rehearsal initrd %.1f MiB",
		(total-avail)/1024, total/1024, float64(fi.Size())/(1<<20))
	for _, n := range masterNodes {
		t.Logf("BENCH rehearsal %s: %s", n.Name, etcdCheck(n))
	}

	cpu.phase("13 validated to pivot and the CSR")
	// After the handoff a master survives a power cut (issue 56).
	rebootMasterAfterHandoff(t, l, st.Spec, masterNodes[0], memberList)
	cpu.phase("master-0 power reset to Ready")
	cpu.log(t, fmt.Sprintf("rehearsal (%d master)", masters))
	logNodeCPU(t, "rehearsal at the end:", st.Spec)
}

// stage13Object is a manifest the test adds to /opt/openshift/manifests
// before stage 13: cluster-bootstrap creates it through the bootstrap's
// real API; after stage 14 it is read back from the masters' (h22m).
const stage13Object = `apiVersion: v1
kind: ConfigMap
metadata:
  name: bootlab-e2e-stage13
  namespace: kube-system
data:
  created: through the bootstrap API at stage 13
`

// stage13Key is where the API server keeps it in etcd.
const stage13Key = "/kubernetes.io/configmaps/kube-system/bootlab-e2e-stage13"

// hostKubectl returns a kubectl on the host, the cached release's (the
// lab's hyperkube called by that name), with the lab's admin kubeconfig
// (read from the bootstrap) pointed at the load balancer.
func hostKubectl(t *testing.T, l labEnv, s *spec.Spec) func(args ...string) (string, error) {
	t.Helper()
	kubes, err := filepath.Glob(filepath.Join(cache.Dir(), "gobuild", "kubernetes", "*", "hyperkube"))
	require.NoError(t, err)
	require.NotEmpty(t, kubes, "the lab's hyperkube in the cache (lab up builds it)")
	dir := t.TempDir()
	bin := filepath.Join(dir, "kubectl")
	require.NoError(t, os.Symlink(kubes[0], bin))
	r := mustRun(t, "lab", "ssh", "-f", l.SpecFile, "bootstrap", "--", "sudo -n cat /opt/openshift/auth/kubeconfig")
	kc := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte(r.Stdout), 0o600))
	lb := "https://" + net.JoinHostPort(s.Network.APIAddress, "6443")
	return func(args ...string) (string, error) {
		out, err := exec.Command(bin, append([]string{"--kubeconfig", kc, "--server", lb, "--tls-server-name", "api-int." + s.Cluster.Domain(), "--request-timeout=10s"}, args...)...).CombinedOutput()
		return string(out), err
	}
}

// assertServiceNetwork checks that the spec's openshift.serviceNetwork
// (TestClass gives cat's lab 172.31.0.0/16) is the cluster's: `kubectl get
// svc kubernetes` shows the first address of it, which the bootstrap's
// kube-apiserver gave the service, and the masters' kube-apiservers, now
// serving, run with that range (their mirror pods' flags).
func assertServiceNetwork(t *testing.T, kubectl func(args ...string) (string, error), s *spec.Spec, masters []spec.Node) {
	t.Helper()
	cidr := spec.DefaultServiceNetworkCIDR
	if len(s.OpenShift.ServiceNetwork) > 0 {
		cidr = s.OpenShift.ServiceNetwork[0]
	}
	want := netip.MustParsePrefix(cidr).Masked().Addr().Next().String()
	out, err := kubectl("get", "svc", "kubernetes", "-n", "default", "-o", "jsonpath={.spec.clusterIP}")
	require.NoError(t, err, out)
	assert.Equal(t, want, strings.TrimSpace(out), "kubectl get svc kubernetes: the first address of the service network %s", cidr)
	for _, n := range masters {
		out, err := kubectl("get", "pod", "-n", "openshift-kube-apiserver", "kube-apiserver-"+n.Name, "-o", "yaml")
		require.NoError(t, err, out)
		assert.Contains(t, out, "--service-cluster-ip-range="+cidr, "%s's kube-apiserver serves the spec's service network", n.Name)
	}
}

// mcsStopDeadline is how long the bootstrap MCS may take to stop after
// stage 14: the kubelet's grace period (30 s by default) and its reading
// of the manifest directory, with room for a slow TCG host.
const mcsStopDeadline = time.Minute

// waitPortClosed dials addr every half second until a dial is refused
// (the host answers, and nothing listens there any more) or d has passed,
// and says how long that took. A dial that times out proves nothing: it
// is tried again.
func waitPortClosed(addr string, d time.Duration) (time.Duration, bool) {
	start := time.Now()
	for {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if errors.Is(err, syscall.ECONNREFUSED) {
			return time.Since(start), true
		}
		if c != nil {
			c.Close()
		}
		if time.Since(start) >= d {
			return time.Since(start), false
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitRealAPIThroughLB polls the API through the load balancer until the
// release's kube-apiserver answers (its /version, which the API stand-in
// does not serve, and /readyz ok), then reads kube-system/cluster-config-v1
// that cluster-bootstrap created through it; it returns what answered.
func waitRealAPIThroughLB(kubectl func(args ...string) (string, error), version string, d time.Duration) string {
	last := ""
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		v, err := kubectl("get", "--raw", "/version")
		if err != nil || !strings.Contains(v, `"gitVersion": "v`+version) {
			last = "version: " + v
			continue
		}
		ready, err := kubectl("get", "--raw", "/readyz")
		if err != nil || strings.TrimSpace(ready) != "ok" {
			last = "readyz: " + ready
			continue
		}
		cm, err := kubectl("get", "cm", "-n", "kube-system", "cluster-config-v1", "-o", "name")
		if err != nil {
			last = "cluster-config-v1: " + cm
			continue
		}
		return "ok: /readyz " + strings.TrimSpace(ready) + ", " + strings.TrimSpace(cm)
	}
	return "gave up: " + last
}

// assertBootsInitrd checks that the domain XML boots an initrd (a volume of
// the lab's pool: lab up uploads boot files there) with the content of the
// cached file want.
func assertBootsInitrd(t *testing.T, xml, want, msg string) {
	t.Helper()
	m := regexp.MustCompile(`<initrd>([^<]+)</initrd>`).FindStringSubmatch(xml)
	require.NotNil(t, m, "%s: the domain boots no initrd", msg)
	got, err := os.ReadFile(m[1])
	require.NoError(t, err, msg)
	wantData, err := os.ReadFile(want)
	require.NoError(t, err, msg)
	assert.True(t, bytes.Equal(got, wantData), "%s: %s is not %s", msg, m[1], want)
}

// memberAtNode is "name@node" of each master's etcd member.
func memberAtNode(masters []spec.Node) []string {
	out := make([]string, 0, len(masters))
	for _, n := range masters {
		out = append(out, n.Name+"@"+n.Name)
	}
	return out
}

// assertDashboardEtcd waits until the dashboard's etcd card lists exactly
// want ("name@node", any order), with one leader among them, read from the
// report of a node whose name starts with from.
func assertDashboardEtcd(t *testing.T, base, lab, from string, want []string) {
	t.Helper()
	slices.Sort(want)
	var got []string
	var leaders int
	v := waitLabView(t, base, lab, func(v labView) bool {
		if v.Etcd == nil {
			return false
		}
		got, leaders = etcdCard(v)
		return slices.Equal(got, want)
	})
	assert.True(t, strings.HasPrefix(v.Etcd.From, from), "the report of %s...: %q", from, v.Etcd.From)
	assert.Equal(t, 1, leaders, "one leader among %v", got)
	t.Logf("the dashboard's etcd card (from %s): %s", v.Etcd.From, strings.Join(got, " "))
}

// joinedDuring13 is what watchJoinsDuring13 saw: the member list once every
// master had joined (or the last one seen), when, and the dashboard's etcd
// card then ("name@node", sorted, and how many it marks leader).
type joinedDuring13 struct {
	members []string
	after   time.Duration
	card    []string
	leaders int
	cardWhy string
}

// watchJoinsDuring13 asks the member list every 15 s until it has as many
// started voting members as wantCard names (the bootstrap's and every
// master's) or done is closed, then reads the dashboard's etcd card until
// it lists wantCard ("name@node", sorted; a minute at most: a master's
// report may still show an older list). It runs beside stage 13, so it
// fails nothing itself; each ask is an etcdctl on the bootstrap, whose one
// vCPU stage 13 needs, and the four members stand for minutes (the
// masters' API servers start before the bootstrap's member leaves), so it
// asks seldom.
func watchJoinsDuring13(memberList func() []string, dash, lab string, wantCard []string, done <-chan struct{}) joinedDuring13 {
	start := time.Now()
	var j joinedDuring13
	for {
		ms := memberList()
		if ms != nil {
			j.members, j.after = ms, time.Since(start)
		}
		if allStartedVoters(ms, len(wantCard)) {
			break
		}
		select {
		case <-done:
			j.cardWhy = "not read: not every master had joined when the stage ended"
			return j
		case <-time.After(15 * time.Second):
		}
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		v, body, err := getLabView(dash, lab)
		if err == nil && v.Etcd == nil {
			err = errors.New("no etcd card yet")
		}
		if err != nil {
			j.cardWhy = fmt.Sprintf("%v: %.300s", err, body)
			continue
		}
		j.card, j.leaders = etcdCard(v)
		j.cardWhy = "from " + v.Etcd.From
		if slices.Equal(j.card, wantCard) {
			break
		}
	}
	return j
}

// allStartedVoters says whether an `etcdctl member list` (its lines) has n
// members, every one started and none a learner.
func allStartedVoters(ms []string, n int) bool {
	all := strings.Join(ms, "\n")
	return len(ms) == n && !strings.Contains(all, "unstarted") && !strings.Contains(all, "true")
}

// etcdCard is the dashboard's etcd card of v as "name@node", sorted, and
// how many of its members it marks leader.
func etcdCard(v labView) (card []string, leaders int) {
	for _, m := range v.Etcd.Members {
		card = append(card, m.Name+"@"+m.Node)
		if m.State == "leader" {
			leaders++
		}
	}
	slices.Sort(card)
	return card, leaders
}
