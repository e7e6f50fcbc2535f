package diagnose

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/testutil"
)

// scenario is a bundle the tests build and what its diagnosis must say.
type scenario struct {
	name  string
	build func(t testing.TB) *fixture
	// first is the check that must fail first ("" for none: healthy).
	first string
	// detail is a part of that check's detail.
	detail string
	// evidence is "FILE:LINE" (the file below the top directory) or a part
	// of an evidence text, one of which the first failure must carry.
	evidence []string
	// golden writes the bundle and its diagnosis under testdata/bundles.
	golden bool
	// unseen, for a bundle where nothing failed, are the checks it cannot
	// show (none: healthy).
	unseen []string
}

// scenarios are the bundles of the table: healthy, and one per point of
// the tree a bootstrap stops at.
func scenarios() []scenario {
	return []scenario{
		{name: "healthy", build: healthy, golden: true},
		{name: "healthy-in-progress", build: inProgress,
			unseen: []string{"masters.joined", "etcd.members", "bootkube.complete"}},
		{name: "healthy-without-masters", build: func(t testing.TB) *fixture {
			f := healthy(t)
			for _, ip := range masterIPs {
				f.emptyDir("control-plane/" + ip)
				delete(f.dirs, "control-plane/"+ip)
			}
			delete(f.dirs, "control-plane")
			return f
		}, unseen: []string{"clock.skew", "conn.bootstrap-masters.api", "conn.masters-masters.api", "masters.ignition", "conn.masters-bootstrap.mcs"}},
		{name: "healthy-with-noise", build: func(t testing.TB) *fixture {
			// What a healthy bootstrap also logs at its end: master-0's
			// kube-apiserver restarting for a new revision (a minute of
			// refused dials), etcd's prober seeing a second of drift.
			f := healthy(t)
			kl := &journal{host: "master-1", ident: "kubenswrapper", pid: 2100}
			kl.every(at(12, 30), at(29, 55), 30*time.Second, `I0514 kubelet.go:2400] "SyncLoop (PLEG): event for pod"`)
			kl.every(at(29, 0), at(29, 55), 5*time.Second, `E0514 reflector.go:158] "Unhandled Error" err="Get \"https://%s:6443/api/v1/pods\": dial tcp %s:6443: connect: connection refused"`, masterIPs[0], masterIPs[0])
			f.set("control-plane/"+masterIPs[1]+"/journals/kubelet.log", kl.bytes())
			etcd := []string{}
			for t := at(14, 0); t.Before(at(30, 0)); t = t.Add(30 * time.Second) {
				etcd = append(etcd, etcdLine(t, "warn", "prober found high clock drift", `"remote-peer-id":"2","clock-drift":"1.12s","rtt":"1ms"`))
			}
			f.setText("control-plane/"+masterIPs[2]+"/containers/etcd-"+containerID("etcdmaster-2")+".log", etcd...)
			return f
		}},
		{name: "etcd-clock-drift", build: func(t testing.TB) *fixture {
			f := healthy(t)
			etcd := []string{}
			for t := at(14, 0); t.Before(at(30, 0)); t = t.Add(30 * time.Second) {
				etcd = append(etcd, etcdLine(t, "warn", "prober found high clock drift", `"remote-peer-id":"2","clock-drift":"3h0m1s","rtt":"1ms"`))
			}
			f.setText("control-plane/"+masterIPs[2]+"/containers/etcd-"+containerID("etcdmaster-2")+".log", etcd...)
			return f
		}, first: "clock.skew", detail: "etcd reports clock drift between members", evidence: []string{`"clock-drift":"3h0m1s"`}},
		{name: "healthy-bootlab", build: func(t testing.TB) *fixture {
			f := healthy(t)
			f.set("bootlab/lab.json", labJSON())
			f.set("bootlab/loadbalancer.json", lbJSON(func(string, string) bool { return true }))
			f.set("bootlab/clocks.json", clocksJSON(0))
			f.set("bootlab/verify.json", []byte(`{"schemaVersion":1,"kind":"VerifyResult","name":"demo","ok":true,"checks":[{"group":"host","name":"dns api-int.demo.bootlab.test","state":"passed","detail":"192.168.126.1"}]}`))
			return f
		}},
		{name: "bootlab-clock-off", build: func(t testing.TB) *fixture {
			f := healthy(t)
			f.set("bootlab/lab.json", labJSON())
			f.set("bootlab/clocks.json", clocksJSON(2*time.Hour))
			return f
		}, first: "clock.skew", detail: "master-1's clock is 2h0m0s ahead of the host's",
			evidence: []string{"bootlab/clocks.json", "master-1: node time 2025-05-14T12:30:02Z, host time 2025-05-14T10:30:02Z (read over SSH within 20ms)"}},
		{name: "bootlab-api-int-wrong", build: func(t testing.TB) *fixture {
			f := healthy(t)
			f.set("bootlab/lab.json", labJSON())
			f.set("bootlab/verify.json", []byte(`{"schemaVersion":1,"kind":"VerifyResult","name":"demo","ok":false,"checks":[
  {"group":"host","name":"dns api-int.demo.bootlab.test","state":"failed","detail":"api-int.demo.bootlab.test resolves to 192.168.126.99, not the load balancer's 192.168.126.1","fix":"bootlab lab up"}]}`))
			return f
		}, first: "api.dns", evidence: []string{"bootlab/verify.json:2", "lab verify: host dns api-int.demo.bootlab.test failed: api-int.demo.bootlab.test resolves to 192.168.126.99"}},
		{name: "etcd-unhealthy", golden: true, build: func(t testing.TB) *fixture {
			f := healthy(t)
			f.mastersWaiting()
			f.bootstrapContainers("etcd-unhealthy")
			f.set("bootstrap/journals/bootkube.log", bootkubeJournal("", "etcd-unhealthy").bytes())
			bk := append([]entry{start(at(1, 0))}, stagesUpTo("")...)
			f.set("bootstrap/services/bootkube.json", records(append(bk, stage(at(9, 0), "wait-for-etcd"))...))
			f.set("bootstrap/services/progress.json", records(start(at(1, 0)), stage(at(1, 0), "wait-for-bootstrap-complete")))
			for _, r := range []string{"nodes", "csr", "configmaps", "clusteroperators"} {
				f.set("resources/"+r+".json", nil)
			}
			return f
		}, first: "etcd.healthy", detail: "stops: its last container ended on a fatal line",
			evidence: []string{"bootstrap/containers/etcd-" + containerID("etcd") + ".log:2", "permission denied"}},
		{name: "api-down", golden: true, build: func(t testing.TB) *fixture {
			f := healthy(t)
			f.mastersWaiting()
			f.bootstrapContainers("api-down")
			f.set("bootstrap/journals/bootkube.log", bootkubeJournal("", "api-down").bytes())
			bk := append([]entry{start(at(1, 0))}, stagesUpTo("")...)
			bk = append(bk, stage(at(9, 0), "wait-for-etcd"), stageEnd(at(9, 10), "wait-for-etcd", "success"), stage(at(9, 15), "cb-bootstrap"))
			f.set("bootstrap/services/bootkube.json", records(bk...))
			f.set("bootstrap/services/progress.json", records(start(at(1, 0)), stage(at(1, 0), "wait-for-bootstrap-complete")))
			for _, r := range []string{"nodes", "csr", "configmaps", "clusteroperators"} {
				f.set("resources/"+r+".json", nil)
			}
			return f
		}, first: "api.readyz", detail: "cluster-bootstrap waited for its API to the end",
			evidence: []string{"bootstrap/journals/bootkube.log:", "Still waiting for the Kubernetes API", "Unable to create storage backend"}},
		{name: "master-not-gathered", golden: true, build: func(t testing.TB) *fixture {
			f := healthy(t)
			f.emptyDir("control-plane/" + masterIPs[2])
			f.resourcesHealthy(2)
			return f
		}, first: "masters.ignition", detail: "192.168.126.13 has not booted the config the MCS serves",
			evidence: []string{"control-plane/" + masterIPs[2], "directory is empty"}},
		{name: "master-refuses-mcs", build: func(t testing.TB) *fixture {
			f := healthy(t)
			mcs := []string{klog(at(5, 10), "I", "api.go:66", "Launching server on :22623")}
			for t := at(12, 0); t.Before(at(29, 59)); t = t.Add(20 * time.Second) {
				mcs = append(mcs, fmt.Sprintf("%s http: TLS handshake error from %s:48122: remote error: tls: unknown certificate authority", t.Format("2006/01/02 15:04:05"), masterIPs[1]))
			}
			f.setText("bootstrap/containers/machine-config-server-"+containerID("mcs")+".log", mcs...)
			f.emptyDir("control-plane/" + masterIPs[1])
			return f
		}, first: "masters.ignition", detail: "master-1 has not booted",
			evidence: []string{"remote error: tls: unknown certificate authority"}},
		{name: "masters-not-joining", build: func(t testing.TB) *fixture {
			f := healthy(t)
			f.resourcesHealthy(1)
			for i := 1; i < 3; i++ {
				kl := &journal{host: masterName[i], ident: "kubenswrapper", pid: 2100}
				kl.every(at(12, 0), at(29, 50), 10*time.Second, `E0514 kubelet_node_status.go:96] "Unable to register node with API server" err="nodes is forbidden: User \"system:anonymous\" cannot create resource \"nodes\"" node="%s"`, masterName[i])
				f.set("control-plane/"+masterIPs[i]+"/journals/kubelet.log", kl.bytes())
			}
			return f
		}, first: "masters.joined", detail: "master-1, master-2 are not a Node",
			evidence: []string{"control-plane/" + masterIPs[1] + "/journals/kubelet.log:108", "Unable to register node"}},
		{name: "bootkube-stage-failed", golden: true, build: func(t testing.TB) *fixture {
			f := healthy(t)
			msg := "Error: open /assets/tls/aggregator-ca.crt: no such file or directory\nUsage:\n  cluster-kube-apiserver-operator render [flags]"
			bk := append([]entry{start(at(1, 0))}, stagesUpTo("kube-apiserver-bootstrap")...)
			bk = append(bk, stageFail(at(3, 10), "kube-apiserver-bootstrap", "138 /usr/local/bin/bootkube.sh", msg), endFail(at(3, 10), "138 /usr/local/bin/bootkube.sh", msg))
			bk = append(bk, start(at(3, 15)), stage(at(3, 16), "kube-apiserver-bootstrap"),
				stageFail(at(3, 20), "kube-apiserver-bootstrap", "138 /usr/local/bin/bootkube.sh", msg), endFail(at(3, 20), "138 /usr/local/bin/bootkube.sh", msg),
				start(at(3, 25)), stage(at(3, 26), "kube-apiserver-bootstrap"))
			f.set("bootstrap/services/bootkube.json", records(bk...))
			f.del("bootstrap/services/progress.json")
			j := &journal{host: "bootstrap", ident: "bootkube.sh", pid: 2201}
			j.at(at(3, 0), "Rendering Kubernetes API server core manifests...")
			j.at(at(3, 10), "Error: open /assets/tls/aggregator-ca.crt: no such file or directory")
			j.at(at(3, 10), "bootkube.service: Main process exited, code=exited, status=1/FAILURE")
			f.set("bootstrap/journals/bootkube.log", j.bytes())
			f.del("bootstrap/containers/machine-config-server-" + containerID("mcs") + ".log")
			f.del("bootstrap/containers/kube-apiserver-" + containerID("kas") + ".log")
			for i := range masterIPs {
				f.emptyDir("control-plane/" + masterIPs[i])
			}
			for _, r := range []string{"nodes", "csr", "configmaps", "clusteroperators"} {
				f.set("resources/"+r+".json", nil)
			}
			return f
		}, first: "service.bootkube", detail: `The bootkube service failed at stage "kube-apiserver-bootstrap" (started 3 times)`,
			evidence: []string{"bootstrap/services/bootkube.json:", "aggregator-ca.crt: no such file or directory"}},
		{name: "release-image-pull", golden: true, build: releaseImageFailing,
			first: "service.release-image", detail: "The bootstrap machine failed to download the release image",
			evidence: []string{"bootstrap/services/release-image.json:", "pinging container registry quay.io", "lookup quay.io on " + lbIP + ":53: no such host"}},
		{name: "clock-skew", golden: true, build: func(t testing.TB) *fixture {
			f := healthy(t)
			kl := &journal{host: "master-1", ident: "kubenswrapper", pid: 2100}
			kl.every(at(12+180, 0), at(29+180, 55), 30*time.Second, `E0514 certificate_manager.go:562] "Unhandled Error" err="x509: certificate has expired or is not yet valid: current time 2025-05-14T13:29:55Z is after 2025-05-14T12:00:00Z"`)
			f.set("control-plane/"+masterIPs[1]+"/journals/kubelet.log", kl.bytes())
			return f
		}, first: "clock.skew", detail: "master-1's journal ends 3h0m0s ahead of the bootstrap's",
			evidence: []string{"control-plane/" + masterIPs[1] + "/journals/kubelet.log:36"}},
		{name: "expired-certificate", golden: true, build: func(t testing.TB) *fixture {
			f := healthy(t)
			f.certs(t, certOptions{expired: true})
			return f
		}, first: "certs.valid", detail: "1 of 4 certificates in the bundle are out of their window",
			evidence: []string{"rendered-assets/openshift/tls/kube-apiserver-lb-server.crt", `"api-int.demo.bootlab.test" expired 2h0m0s before the bundle's time`}},
		{name: "etcd-cert-other-ca", build: func(t testing.TB) *fixture {
			f := healthy(t)
			f.certs(t, certOptions{otherCA: true})
			return f
		}, first: "certs.chain", detail: "1 certificate(s) are not signed by the CA they name",
			evidence: []string{"etcd-serving-bootstrap.crt", `names issuer "etcd-signer", but no CA of that name in the bundle signed it`}},
		{name: "csr-pending", build: func(t testing.TB) *fixture {
			f := healthy(t)
			type obj = map[string]any
			f.set("resources/csr.json", ocJSON(obj{"apiVersion": "v1", "kind": "List", "items": []obj{
				{"metadata": obj{"name": "csr-8x2kq", "creationTimestamp": ts(at(15, 0))},
					"spec": obj{"username": "system:node:master-2", "signerName": "kubernetes.io/kubelet-serving"}, "status": obj{}},
			}}))
			return f
		}, first: "csr.pending", detail: "1 CSR(s) Pending for longer than 5m0s",
			evidence: []string{"resources/csr.json:7", "csr-8x2kq from system:node:master-2 (kubernetes.io/kubelet-serving) Pending for 15m0s"}},
		{name: "csr-approval-stopped", build: func(t testing.TB) *fixture {
			return approveCSRStopped(inProgress(t), false)
		}, first: "csr.pending", detail: "2 CSR(s) Pending, and approve-csr.service, which approves them until bootkube is done, was stopped on the bootstrap",
			evidence: []string{"bootstrap/journals/approve-csr.log:5", "systemd[1]: Stopped approve-csr.service - Approve CSRs during bootstrap phase."}},
		// The learner's fix: started again, it approves the young CSRs
		// within 20 s, and they are not waiting yet.
		{name: "csr-approval-started-again", build: func(t testing.TB) *fixture {
			return approveCSRStopped(inProgress(t), true)
		}, unseen: []string{"masters.joined", "etcd.members", "bootkube.complete"}},
		{name: "etcd-peer-blocked", build: func(t testing.TB) *fixture {
			f := healthy(t)
			f.resourcesHealthy(3)
			type obj = map[string]any
			f.set("resources/configmaps.json", ocJSON(obj{"apiVersion": "v1", "kind": "List", "items": []obj{
				{"metadata": obj{"name": "etcd-endpoints", "namespace": "openshift-etcd", "annotations": obj{"alpha.installer.openshift.io/etcd-bootstrap": bootIP}},
					"data": obj{"0000000000000001": masterIPs[0], "0000000000000002": masterIPs[1]}},
			}}))
			var etcd []string
			for t := at(13, 0); t.Before(at(29, 59)); t = t.Add(15 * time.Second) {
				etcd = append(etcd, etcdLine(t, "warn", "prober detected unhealthy status", fmt.Sprintf(`"remote-peer-id":"1","error":"dial tcp %s:2380: i/o timeout"`, bootIP)))
			}
			f.setText("control-plane/"+masterIPs[2]+"/containers/etcd-"+containerID("etcdmaster-2")+".log", etcd...)
			return f
		}, first: "conn.masters-bootstrap.etcd", detail: "master-2 cannot reach bootstrap's 192.168.126.10:2380",
			evidence: []string{"control-plane/" + masterIPs[2] + "/containers/etcd-" + containerID("etcdmaster-2") + ".log:68", "i/o timeout"}},
		{name: "bootstrap-in-place", build: func(t testing.TB) *fixture {
			f := releaseImageFailing(t)
			f.prefix = "log-bundle-" + gatherTime + "/log-bundle-bootstrap"
			return f
		}, first: "service.release-image", detail: "The bootstrap machine failed to download the release image"},
		// mcs-blocked-from-masters at stage 12: a filter drops every
		// connection to the bootstrap's 22623, haproxy's checks time out,
		// and the masters, without their config, serve none yet.
		{name: "mcs-blocked", build: func(t testing.TB) *fixture {
			f := healthy(t)
			f.set("bootlab/lab.json", labJSON())
			f.set("bootlab/loadbalancer.json", lbDown(t, "machine-config", "L4TOUT in 2001ms", "L4CON Connection refused"))
			bk := append([]entry{start(at(1, 0))}, stagesUpTo("")...)
			f.set("bootstrap/services/bootkube.json", records(append(bk, stage(at(9, 15), "cb-bootstrap"))...))
			f.set("bootstrap/journals/bootkube.log", bootkubeJournal("", "pods-pending").bytes())
			return f
		}, first: "api.lb", detail: "no backend of the machine-config frontend (22623) is up: bootstrap DOWN (L4TOUT in 2001ms), master-0 DOWN (L4CON Connection refused)",
			evidence: []string{"bootlab/loadbalancer.json"}},
		{name: "bootlab-lb-missing-bootstrap", build: func(t testing.TB) *fixture {
			f := healthy(t)
			f.set("bootlab/lab.json", labJSON())
			f.set("bootlab/loadbalancer.json", lbJSON(func(frontend, server string) bool { return !(frontend == "machine-config" && server == "bootstrap") }))
			// bootkube still running at cb-bootstrap: the bootstrap serves.
			bk := append([]entry{start(at(1, 0))}, stagesUpTo("")...)
			f.set("bootstrap/services/bootkube.json", records(append(bk, stage(at(9, 15), "cb-bootstrap"))...))
			j := bootkubeJournal("", "pods-pending")
			f.set("bootstrap/journals/bootkube.log", j.bytes())
			return f
		}, first: "api.lb", detail: "the machine-config frontend (22623) has no backend for bootstrap",
			evidence: []string{"bootlab/loadbalancer.json"}},
	}
}

// releaseImageFailing is a bootstrap whose release image never came: the
// pull loop of release-image-download.sh recorded in the installer's shape,
// and nothing after it ran.
func releaseImageFailing(t testing.TB) *fixture {
	f := newFixture()
	release := "quay.io/openshift-release-dev/ocp-release@sha256:" + containerID("release")
	why := fmt.Sprintf(`Error: initializing source docker://%s: pinging container registry quay.io: Get "https://quay.io/v2/": dial tcp: lookup quay.io on %s:53: no such host`, release, lbIP)
	recs := []entry{start(at(0, 5))}
	ri := &journal{host: "bootstrap", ident: "release-image-download.sh", pid: 1201}
	ri.at(at(0, 5), "Pulling %s...", release)
	for t := at(0, 5); t.Before(at(29, 50)); t = t.Add(30 * time.Second) {
		recs = append(recs, stage(t, "pull-release-image"),
			stageFail(t.Add(20*time.Second), "pull-release-image", "25 /usr/local/bin/release-image-download.sh", fmt.Sprintf("Pulling %s...\n%s\nPull failed. Retrying %s...", release, why, release)))
		ri.at(t.Add(20*time.Second), "%s", why).at(t.Add(20*time.Second), "Pull failed. Retrying %s...", release)
	}
	recs = append(recs, stage(at(29, 55), "pull-release-image"))
	f.set("bootstrap/services/release-image.json", records(recs...))
	f.set("bootstrap/journals/release-image.log", ri.bytes())
	for _, u := range []string{"bootkube", "kubelet", "crio", "crio-configure", "approve-csr"} {
		f.set("bootstrap/journals/"+u+".log", []byte("-- No entries --\n"))
	}
	f.set("bootstrap/network/ip-addr.txt", ipAddr(bootIP))
	f.setText("bootstrap/network/resolv.conf", "nameserver "+lbIP)
	f.setText("failed-units.txt", "0 loaded units listed.")
	for _, ip := range masterIPs {
		f.emptyDir("control-plane/" + ip)
	}
	for _, r := range []string{"nodes", "csr", "configmaps", "clusteroperators"} {
		f.set("resources/"+r+".json", nil)
	}
	f.certs(t, certOptions{})
	return f
}

// inProgress is a healthy bootstrap gathered while it runs: the API up
// for twenty minutes less thirty seconds, cluster-bootstrap waiting for the
// control-plane pods, master-0 joined, the other two registering.
func inProgress(t testing.TB) *fixture {
	f := healthy(t)
	bk := append([]entry{start(at(1, 0))}, stagesUpTo("")...)
	bk = append(bk, stage(at(9, 0), "wait-for-etcd"), stageEnd(at(9, 10), "wait-for-etcd", "success"), stage(at(9, 15), "cb-bootstrap"))
	f.set("bootstrap/services/bootkube.json", records(bk...))
	f.set("bootstrap/services/progress.json", records(start(at(1, 0)), stage(at(1, 0), "wait-for-bootstrap-complete")))
	f.set("bootstrap/journals/bootkube.log", bootkubeJournal("", "pods-pending").bytes())
	f.resourcesHealthy(1)
	for i := 1; i < 3; i++ {
		kl := &journal{host: masterName[i], ident: "kubenswrapper", pid: 2100}
		kl.every(at(27, 0), at(29, 55), 15*time.Second, `I0514 kubelet_node_status.go:75] "Attempting to register node" node="%s"`, masterName[i])
		f.set("control-plane/"+masterIPs[i]+"/journals/kubelet.log", kl.bytes())
		f.del("control-plane/" + masterIPs[i] + "/containers/etcd-" + containerID("etcd"+masterName[i]) + ".log")
	}
	return f
}

// clocksJSON is bootlab/clocks.json with master-1's clock off by skew.
func clocksJSON(skew time.Duration) []byte {
	type obj = map[string]any
	var nodes []obj
	for i, n := range append([]string{"bootstrap"}, masterName...) {
		before := gathered.Add(time.Duration(i) * time.Second)
		node := before.Add(10 * time.Millisecond)
		if n == "master-1" {
			node = node.Add(skew)
		}
		nodes = append(nodes, obj{"node": n, "hostBefore": before, "nodeTime": node, "hostAfter": before.Add(20 * time.Millisecond)})
	}
	data, _ := json.MarshalIndent(obj{"nodes": nodes}, "", "  ")
	return data
}

// labJSON is bootlab/lab.json of the fixtures' lab.
func labJSON() []byte {
	type obj = map[string]any
	nodes := []obj{{"name": "bootstrap", "role": "bootstrap", "ip": bootIP}}
	for i := range masterIPs {
		nodes = append(nodes, obj{"name": masterName[i], "role": "master", "ip": masterIPs[i]})
	}
	data, _ := json.MarshalIndent(obj{"name": "demo", "profile": "openshift", "gathered": gathered, "apiAddress": lbIP, "nodes": nodes}, "", "  ")
	return data
}

// lbJSON is bootlab/loadbalancer.json with the servers keep keeps, all up.
func lbJSON(keep func(frontend, server string) bool) []byte {
	type obj = map[string]any
	var backends []obj
	for _, fe := range []struct {
		name string
		port int
	}{{"api", 6443}, {"machine-config", 22623}} {
		for i, n := range append([]string{"bootstrap"}, masterName...) {
			ip := bootIP
			if i > 0 {
				ip = masterIPs[i-1]
			}
			if keep(fe.name, n) {
				backends = append(backends, obj{"frontend": fe.name, "server": n, "address": fmt.Sprintf("%s:%d", ip, fe.port), "status": "UP", "lastCheck": "L7OK 200"})
			}
		}
	}
	data, _ := json.MarshalIndent(obj{"running": true, "backends": backends}, "", "  ")
	return data
}

// diagnoseFixture reads f's archive as a bundle file named source would be
// read, and diagnoses it.
func diagnoseFixture(t *testing.T, f *fixture, source string) (*Report, []byte) {
	t.Helper()
	data := f.tarGz(t)
	b, err := ReadBundleFrom(context.Background(), bytes.NewReader(data), source, DefaultLimits())
	require.NoError(t, err)
	return Diagnose(b, Options{Now: gathered.Add(48 * time.Hour)}), data
}

// Every bundle of the table is diagnosed at its point, with the evidence
// (the file and line a person opens) and the fix; the healthy one is
// healthy, with nothing it could not see.
func TestDiagnoseBundles(t *testing.T) {
	t.Parallel()
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			source := "testdata/bundles/" + sc.name + ".tar.gz"
			r, data := diagnoseFixture(t, sc.build(t), source)
			var text bytes.Buffer
			require.NoError(t, r.WriteText(&text))
			if sc.golden {
				testutil.Golden(t, filepath.Join("..", "..", source), data)
				testutil.Golden(t, filepath.Join("..", "..", "testdata", "bundles", sc.name+".txt"), text.Bytes())
			}
			if sc.first == "" {
				assert.Empty(t, r.FirstFailure, "a healthy bootstrap is never diagnosed as broken:\n%s", text.String())
				assert.True(t, r.OK)
				assert.Equal(t, len(sc.unseen) == 0, r.Healthy, "healthy only when every check passed")
				var unseen []string
				for _, u := range r.CouldNotSee {
					unseen = append(unseen, u.Check)
				}
				assert.Equal(t, sc.unseen, unseen, "\n%s", text.String())
				return
			}
			assert.False(t, r.Healthy)
			require.Equal(t, sc.first, r.FirstFailure, "\n%s", text.String())
			c := r.First()
			assert.Contains(t, c.Detail, sc.detail)
			assert.NotEmpty(t, c.Fix)
			var seen []string
			for _, e := range c.Evidence {
				seen = append(seen, strings.TrimPrefix(e.Where(), "log-bundle-"+gatherTime+"/")+"  "+e.Text)
			}
			for _, want := range sc.evidence {
				assert.Contains(t, strings.Join(seen, "\n"), want, "evidence of %s", c.ID)
			}
		})
	}
}

// approveCSRStopped is f with approve-csr.service stopped at 20:00 (and
// started again at 28:00 when started), and master-1's and master-2's
// client CSRs Pending since 27:00.
func approveCSRStopped(f *fixture, started bool) *fixture {
	ac := &journal{host: "bootstrap", ident: "approve-csr.sh", pid: 1500}
	ac.at(at(1, 0), "Approving all CSR requests until bootstrapping is complete...")
	ac.at(at(14, 0), "certificatesigningrequest.certificates.k8s.io/csr-m0a approved")
	sd := &journal{host: "bootstrap", ident: "systemd", pid: 1}
	sd.at(at(20, 0), "Stopping approve-csr.service - Approve CSRs during bootstrap phase...")
	sd.at(at(20, 0), "approve-csr.service: Deactivated successfully.")
	sd.at(at(20, 0), "Stopped approve-csr.service - Approve CSRs during bootstrap phase.")
	if started {
		sd.at(at(28, 0), "Started approve-csr.service - Approve CSRs during bootstrap phase.")
	}
	ac.lines = append(ac.lines, sd.lines...)
	f.set("bootstrap/journals/approve-csr.log", ac.bytes())
	type obj = map[string]any
	csrs := []obj{{"metadata": obj{"name": "csr-m0a", "creationTimestamp": ts(at(12, 0))},
		"spec":   obj{"username": "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper", "signerName": "kubernetes.io/kube-apiserver-client-kubelet"},
		"status": obj{"conditions": []obj{{"type": "Approved", "status": "True"}}}}}
	for i := 1; i < 3; i++ {
		csrs = append(csrs, obj{"metadata": obj{"name": fmt.Sprintf("csr-m%da", i), "creationTimestamp": ts(at(27, 0))},
			"spec": obj{"username": "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper", "signerName": "kubernetes.io/kube-apiserver-client-kubelet"}, "status": obj{}})
	}
	f.set("resources/csr.json", ocJSON(obj{"apiVersion": "v1", "kind": "List", "items": csrs}))
	return f
}

// lbDown is lbJSON with every server of frontend DOWN: the bootstrap's
// check ending in bootCheck, the masters' in masterCheck.
func lbDown(t testing.TB, frontend, bootCheck, masterCheck string) []byte {
	var lb map[string]any
	require.NoError(t, json.Unmarshal(lbJSON(func(string, string) bool { return true }), &lb))
	for _, b := range lb["backends"].([]any) {
		b := b.(map[string]any)
		if b["frontend"] != frontend {
			continue
		}
		b["status"], b["lastCheck"] = "DOWN", masterCheck
		if b["server"] == "bootstrap" {
			b["lastCheck"] = bootCheck
		}
	}
	data, _ := json.MarshalIndent(lb, "", "  ")
	return data
}
