package diagnose

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"path"
	"sort"
	"strings"
	"testing"
	"time"
)

// The fixtures' lab: the default bootlab network, a bootstrap and three
// masters, gathered at 10:30 UTC on 14 May 2025 (the installer's gather
// id names that time).
const (
	gatherTime = "20250514103000"
	bootIP     = "192.168.126.10"
	lbIP       = "192.168.126.1"
	clusterDom = "demo.bootlab.test"
)

var (
	t0         = time.Date(2025, 5, 14, 10, 0, 0, 0, time.UTC)
	gathered   = time.Date(2025, 5, 14, 10, 30, 0, 0, time.UTC)
	masterIPs  = []string{"192.168.126.11", "192.168.126.12", "192.168.126.13"}
	masterName = []string{"master-0", "master-1", "master-2"}
)

// at is t0 plus m minutes and s seconds.
func at(m, s int) time.Time {
	return t0.Add(time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
}

// fixture is a log bundle under construction, in the installer's layout:
// files by their path below log-bundle-<id>/, the directories tar lists.
type fixture struct {
	id    string
	files map[string][]byte
	dirs  map[string]bool
	// prefix is the top directory ("log-bundle-<id>"; a bootstrap-in-place
	// bundle nests log-bundle-bootstrap/ in it).
	prefix string
}

func newFixture() *fixture {
	return &fixture{id: gatherTime, files: map[string][]byte{}, dirs: map[string]bool{}, prefix: "log-bundle-" + gatherTime}
}

func (f *fixture) set(rel string, data []byte) *fixture {
	f.files[rel] = data
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		f.dirs[d] = true
	}
	return f
}

func (f *fixture) setText(rel string, lines ...string) *fixture {
	return f.set(rel, []byte(strings.Join(lines, "\n")+"\n"))
}

func (f *fixture) del(rel string) *fixture {
	delete(f.files, rel)
	return f
}

// emptyDir keeps dir as an empty directory (the installer makes
// control-plane/<ip>/ before it tries to log in).
func (f *fixture) emptyDir(dir string) *fixture {
	for rel := range f.files {
		if strings.HasPrefix(rel, dir+"/") {
			delete(f.files, rel)
		}
	}
	for d := range f.dirs {
		if strings.HasPrefix(d, dir+"/") {
			delete(f.dirs, d)
		}
	}
	f.dirs[dir] = true
	return f
}

// tarGz is the bundle as installer-gather.sh's `tar cz -C ARTIFACTS
// --transform "s?^\.?log-bundle-ID?" .` writes it: the top directory, then
// every directory and file below it, in order, with fixed times so the
// bytes are the same every run.
func (f *fixture) tarGz(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	var names []string
	for d := range f.dirs {
		names = append(names, d+"/")
	}
	for rel := range f.files {
		names = append(names, rel)
	}
	sort.Strings(names)
	mtime := gathered
	hdr := func(name string, typ byte, size int64) {
		mode := int64(0o644)
		if typ == tar.TypeDir {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: typ, Size: size, Mode: mode, ModTime: mtime,
			Uname: "core", Gname: "core", Uid: 1000, Gid: 1000, Format: tar.FormatGNU}); err != nil {
			t.Fatal(err)
		}
	}
	if f.prefix != "" {
		hdr(f.prefix+"/", tar.TypeDir, 0)
	}
	for _, n := range names {
		full := path.Join(f.prefix, n)
		if strings.HasSuffix(n, "/") {
			hdr(full+"/", tar.TypeDir, 0)
			continue
		}
		hdr(full, tar.TypeReg, int64(len(f.files[n])))
		if _, err := tw.Write(f.files[n]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// journal is a unit's journal as `journalctl --boot --no-pager
// --output=short --unit=UNIT` prints it.
type journal struct {
	host, ident string
	pid         int
	lines       []string
}

func (j *journal) at(t time.Time, format string, args ...any) *journal {
	j.lines = append(j.lines, fmt.Sprintf("%s %s %s[%d]: %s", t.Format("Jan 02 15:04:05"), j.host, j.ident, j.pid, fmt.Sprintf(format, args...)))
	return j
}

// every logs msg every step from from to to.
func (j *journal) every(from, to time.Time, step time.Duration, format string, args ...any) *journal {
	for t := from; !t.After(to); t = t.Add(step) {
		j.at(t, format, args...)
	}
	return j
}

func (j *journal) bytes() []byte { return []byte(strings.Join(j.lines, "\n") + "\n") }

// entry is a service record entry, as bootstrap-service-record.sh writes it
// (jq keeps only the fields with a value).
type entry map[string]string

func records(es ...entry) []byte {
	data, err := json.MarshalIndent(es, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(data, '\n')
}

func ts(t time.Time) string { return t.Format("2006-01-02T15:04:05Z") }

func start(t time.Time) entry { return entry{"timestamp": ts(t), "phase": "service start"} }
func end(t time.Time, result string) entry {
	return entry{"timestamp": ts(t), "phase": "service end", "result": result}
}
func stage(t time.Time, name string) entry {
	return entry{"timestamp": ts(t), "phase": "stage start", "stage": name}
}
func stageEnd(t time.Time, name, result string) entry {
	return entry{"timestamp": ts(t), "phase": "stage end", "stage": name, "result": result}
}
func stageFail(t time.Time, name, line, msg string) entry {
	return entry{"timestamp": ts(t), "phase": "stage end", "stage": name, "result": "failure", "errorLine": line, "errorMessage": msg}
}

// endFail is record_service_exit's service end after a failed stage: it
// carries the same error.
func endFail(t time.Time, line, msg string) entry {
	return entry{"timestamp": ts(t), "phase": "service end", "result": "failure", "errorLine": line, "errorMessage": msg}
}

// bootkubeStages are bootkube.sh's stages of 4.19 as the records name
// them, with a minute each from 10:01.
var bootkubeStages = []string{"openshift-manifests", "api-bootstrap", "auth-api-bootstrap", "config-bootstrap", "cvo-bootstrap",
	"etcd-bootstrap", "kube-apiserver-bootstrap", "kube-controller-manager-bootstrap", "kube-scheduler-bootstrap",
	"ingress-operator-bootstrap", "node-tuning-bootstrap", "mco-bootstrap", "cco-bootstrap"}

// stagesUpTo are the records of the stages before stop (all when stop is
// ""), each a success, and then stop's start.
func stagesUpTo(stop string) []entry {
	var out []entry
	for i, s := range bootkubeStages {
		t := at(1, i*20)
		out = append(out, stage(t, s))
		if s == stop {
			return out
		}
		out = append(out, stageEnd(t.Add(15*time.Second), s, "success"))
	}
	return out
}

// ip addr's output for address a.
func ipAddr(a string) []byte {
	return []byte(fmt.Sprintf(`1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000
    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00
    inet 127.0.0.1/8 scope host lo
       valid_lft forever preferred_lft forever
2: ens3: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc fq_codel state UP group default qlen 1000
    link/ether 52:54:00:aa:bb:10 brd ff:ff:ff:ff:ff:ff
    inet %s/24 brd 192.168.126.255 scope global dynamic noprefixroute ens3
       valid_lft 3500sec preferred_lft 3500sec
`, a))
}

// containerID is a fixed 64-hex container id for name n.
func containerID(n string) string {
	return fmt.Sprintf("%x", sha(n))
}

func sha(s string) [32]byte {
	var out [32]byte
	copy(out[:], []byte(strings.Repeat(s+"#", 32)))
	for i := range out {
		out[i] ^= byte(i * 7)
	}
	return out
}

// etcdLine is one of etcd's zap JSON lines.
func etcdLine(t time.Time, level, msg, extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return fmt.Sprintf(`{"level":"%s","ts":"%s","caller":"etcdserver/server.go:1","msg":"%s"%s}`, level, t.Format("2006-01-02T15:04:05.000000Z"), msg, extra)
}

// klog is one klog line.
func klog(t time.Time, sev, file, msg string) string {
	return fmt.Sprintf("%s%s       1 %s] %s", sev, t.Format("0102 15:04:05.000000"), file, msg)
}

// healthy is a complete, healthy bootstrap of a bootstrap and three
// masters, gathered with every master, in the installer's layout.
func healthy(t testing.TB) *fixture {
	f := newFixture()
	f.bootstrapHealthy()
	for i := range masterIPs {
		f.masterHealthy(i)
	}
	f.resourcesHealthy(3)
	f.certs(t, certOptions{})
	return f
}

func (f *fixture) bootstrapHealthy() {
	f.setText("failed-units.txt", "  UNIT LOAD ACTIVE SUB DESCRIPTION", "0 loaded units listed.")
	f.setText("gather.log", "Gathering bootstrap systemd summary ...", "Log bundle written to /var/home/core/log-bundle-"+gatherTime+".tar.gz")
	f.set("bootstrap/services/release-image.json", records(start(at(0, 5)), stage(at(0, 5), "pull-release-image"),
		stageEnd(at(0, 40), "pull-release-image", "success"), stage(at(0, 40), "image-metadata-arches-match"),
		stageEnd(at(0, 41), "image-metadata-arches-match", "success"), end(at(0, 41), "success")))
	f.set("bootstrap/services/crio-configure.json", records(start(at(0, 42)), end(at(0, 44), "success")))
	// kubelet.service's record holds only its pre-command's entries.
	f.set("bootstrap/services/kubelet.json", records(entry{"timestamp": ts(at(0, 46)), "phase": "pre-command start", "preCommand": "kubelet-pause-image"},
		entry{"timestamp": ts(at(0, 48)), "phase": "pre-command end", "preCommand": "kubelet-pause-image", "result": "success"}))
	bk := append([]entry{start(at(1, 0))}, stagesUpTo("")...)
	bk = append(bk, stage(at(8, 0), "resolve-api-url"), stageEnd(at(8, 1), "resolve-api-url", "success"),
		stage(at(8, 1), "resolve-api-int-url"), stageEnd(at(8, 2), "resolve-api-int-url", "success"),
		stage(at(9, 0), "wait-for-etcd"), stageEnd(at(9, 10), "wait-for-etcd", "success"),
		stage(at(9, 15), "cb-bootstrap"), stageEnd(at(21, 0), "cb-bootstrap", "success"),
		stage(at(21, 0), "cvo-overrides"), stageEnd(at(21, 5), "cvo-overrides", "success"),
		stage(at(21, 5), "wait-for-ceo"), stageEnd(at(26, 0), "wait-for-ceo", "success"),
		stage(at(27, 0), "check-api-url"), stageEnd(at(27, 1), "check-api-url", "success"),
		stage(at(27, 1), "check-api-int-url"), stageEnd(at(27, 2), "check-api-int-url", "success"),
		end(at(28, 0), "success"))
	f.set("bootstrap/services/bootkube.json", records(bk...))
	f.set("bootstrap/services/progress.json", records(start(at(1, 0)), stage(at(1, 0), "wait-for-bootstrap-complete"),
		stageEnd(at(28, 5), "wait-for-bootstrap-complete", "success"), stage(at(29, 0), "report-bootstrap-complete"),
		stageEnd(at(29, 10), "report-bootstrap-complete", "success"), end(at(29, 10), "success")))
	release := "quay.io/openshift-release-dev/ocp-release@sha256:" + containerID("release")
	ri := &journal{host: "bootstrap", ident: "release-image-download.sh", pid: 1201}
	ri.at(at(0, 5), "Pulling %s...", release).at(at(0, 40), "%s", containerID("image"))
	f.set("bootstrap/journals/release-image.log", ri.bytes())
	f.set("bootstrap/journals/bootkube.log", bootkubeJournal(release, "healthy").bytes())
	kl := &journal{host: "bootstrap", ident: "kubelet", pid: 1400}
	kl.every(at(0, 50), at(29, 50), 20*time.Second, `I0514 kubelet.go:2400] "SyncLoop (PLEG): event for pod" pod="openshift-etcd/etcd-bootstrap-member-bootstrap"`)
	f.set("bootstrap/journals/kubelet.log", kl.bytes())
	cr := &journal{host: "bootstrap", ident: "crio", pid: 1300}
	cr.every(at(0, 45), at(29, 45), time.Minute, `time="2025-05-14" level=info msg="Checking image status: quay.io/openshift-release-dev/ocp-v4.0-art-dev"`)
	f.set("bootstrap/journals/crio.log", cr.bytes())
	ac := &journal{host: "bootstrap", ident: "approve-csr.sh", pid: 1500}
	ac.at(at(1, 0), "Approving all CSR requests until bootstrapping is complete...")
	ac.at(at(14, 0), "certificatesigningrequest.certificates.k8s.io/csr-m0a approved")
	f.set("bootstrap/journals/approve-csr.log", ac.bytes())
	for _, u := range []string{"crio-configure", "ironic", "master-bmh-update"} {
		f.set("bootstrap/journals/"+u+".log", []byte("-- No entries --\n"))
	}
	f.set("bootstrap/network/ip-addr.txt", ipAddr(bootIP))
	f.setText("bootstrap/network/ip-route.txt", "default via "+lbIP+" dev ens3 proto dhcp src "+bootIP+" metric 100")
	f.setText("bootstrap/network/hostname.txt", "bootstrap")
	f.setText("bootstrap/network/resolv.conf", "nameserver "+lbIP)
	f.bootstrapContainers("healthy")
	f.setText("rendered-assets/openshift/manifests/cluster-infrastructure-02-config.yml", "apiVersion: config.openshift.io/v1", "kind: Infrastructure")
	f.setText("rendered-assets/openshift/auth/kubeadmin-password.hash", "never read")
}

// bootkubeJournal is bootkube.sh's journal: the renders, the API name
// checks, the etcd wait, cluster-bootstrap, the end. how is healthy,
// etcd-unhealthy or api-down.
func bootkubeJournal(release, how string) *journal {
	j := &journal{host: "bootstrap", ident: "bootkube.sh", pid: 2201}
	j.at(at(1, 0), "Rendering cluster config manifests...")
	for i, s := range bootkubeStages {
		j.at(at(1, i*20), "Starting stage %s", s)
	}
	j.at(at(5, 0), "Rendering MCO manifests...")
	j.at(at(8, 0), "Checking if api.%s of type API_URL is resolvable", clusterDom)
	j.at(at(8, 0), "Successfully resolved API_URL api.%s", clusterDom)
	j.at(at(8, 1), "Checking if api-int.%s of type API_INT_URL is resolvable", clusterDom)
	j.at(at(8, 1), "Successfully resolved API_INT_URL api-int.%s", clusterDom)
	j.at(at(8, 30), "Rendering CCO manifests...")
	j.at(at(9, 0), `{"level":"warn","ts":"2025-05-14T10:09:00.000Z","msg":"retrying of unary invoker failed","error":"rpc error: code = DeadlineExceeded desc = context deadline exceeded"}`)
	j.at(at(9, 0), "%s", etcdRetryLine+"...")
	if how == "etcd-unhealthy" {
		for t := at(9, 5); t.Before(at(29, 59)); t = t.Add(5 * time.Second) {
			j.at(t, "https://localhost:2379 is unhealthy: failed to commit proposal: context deadline exceeded")
			j.at(t, "Error: unhealthy cluster")
			j.at(t, "%s", etcdRetryLine+"...")
		}
		return j
	}
	j.at(at(9, 10), "https://localhost:2379 %s: took = 10.48ms", etcdHealthyLine)
	j.at(at(9, 15), "Starting cluster-bootstrap...")
	j.at(at(9, 16), "Starting temporary bootstrap control plane...")
	j.at(at(9, 16), "Waiting up to 20m0s for the Kubernetes API")
	if how == "api-down" {
		for t := at(9, 30); t.Before(at(29, 59)); t = t.Add(10 * time.Second) {
			j.at(t, `Still waiting for the Kubernetes API: Get "https://localhost:6443/readyz": dial tcp [::1]:6443: connect: connection refused`)
		}
		return j
	}
	j.at(at(9, 30), `Still waiting for the Kubernetes API: Get "https://localhost:6443/readyz": dial tcp [::1]:6443: connect: connection refused`)
	j.at(at(10, 30), "API is up")
	pods := []string{"openshift-kube-apiserver/kube-apiserver", "openshift-kube-scheduler/openshift-kube-scheduler", "kube-system/kube-controller-manager", "openshift-cluster-version/cluster-version-operator"}
	for _, p := range pods {
		j.at(at(11, 0), "\tPod Status:%s\tDoesNotExist", p)
	}
	if how == "pods-pending" {
		for t := at(15, 0); t.Before(at(29, 59)); t = t.Add(time.Minute) {
			j.at(t, "\tPod Status:%s\tPending", pods[0])
			j.at(t, "\tPod Status:%s\tReady", pods[1])
		}
		return j
	}
	for _, p := range pods {
		j.at(at(20, 0), "\tPod Status:%s\tReady", p)
	}
	j.at(at(20, 30), "All self-hosted control plane components successfully started")
	j.at(at(21, 0), "Tearing down temporary bootstrap control plane...")
	j.at(at(21, 5), "Waiting for CEO to finish...")
	j.at(at(26, 0), "Cluster etcd operator bootstrapped successfully")
	j.at(at(27, 0), "Checking if api.%s of type API_URL reachable", clusterDom)
	j.at(at(27, 0), "Success while trying to reach API_URL's https endpoint at https://api.%s:6443/version", clusterDom)
	j.at(at(27, 1), "Checking if api-int.%s of type API_INT_URL reachable", clusterDom)
	j.at(at(27, 1), "Success while trying to reach API_INT_URL's https endpoint at https://api-int.%s:6443/version", clusterDom)
	j.at(at(28, 0), "%s", bootkubeCompleteLine)
	return j
}

// bootstrapContainers are crictl's logs and inspects of the bootstrap's
// static pods: etcd, the kube-apiserver, the MCS.
func (f *fixture) bootstrapContainers(how string) {
	var etcd []string
	etcd = append(etcd, etcdLine(at(7, 0), "info", "starting etcd", `"etcd-version":"3.5.21"`))
	if how == "etcd-unhealthy" {
		etcd = append(etcd, etcdLine(at(7, 1), "fatal", "failed to start etcd", `"error":"cannot access data directory: mkdir /var/lib/etcd/member: permission denied"`))
	} else {
		etcd = append(etcd, etcdLine(at(7, 5), "info", "serving client traffic securely", `"address":"[::]:2379"`))
		for i, ip := range masterIPs {
			etcd = append(etcd, etcdLine(at(13, i*10), "info", "added member", fmt.Sprintf(`"added-peer-peer-urls":["https://%s:2380"]`, ip)))
		}
		for t := at(14, 0); t.Before(at(30, 0)); t = t.Add(30 * time.Second) {
			etcd = append(etcd, etcdLine(t, "info", "compacted", `"revision":100`))
		}
	}
	id := containerID("etcd")
	f.setText("bootstrap/containers/etcd-"+id+".log", etcd...)
	f.setText("bootstrap/containers/etcd-"+id+".inspect", `{"status":{"id":"`+id+`","state":"CONTAINER_RUNNING"},"info":{"runtimeSpec":{"process":{"env":["ETCD_DATA_DIR=/var/lib/etcd"]}}}}`)
	kas := []string{klog(at(9, 20), "I", "server.go:150", "Version: v1.32.4")}
	if how == "api-down" {
		kas = append(kas, klog(at(29, 50), "W", "logging.go:55", `[core] grpc: addrConn.createTransport failed to connect to {Addr: "localhost:2379"}`),
			klog(at(29, 51), "F", "storage_decorator.go:78", "Unable to create storage backend: config (&{ /registry {[https://localhost:2379]}}), err (context deadline exceeded)"))
	} else {
		kas = append(kas, klog(at(10, 29), "I", "secure_serving.go:213", "Serving securely on [::]:6443"))
	}
	f.setText("bootstrap/containers/kube-apiserver-"+containerID("kas")+".log", kas...)
	mcs := []string{klog(at(5, 10), "I", "start.go:38", "Version: 4.19.0 (Raw: v4.19.0)"), klog(at(5, 10), "I", "api.go:66", "Launching server on :22623")}
	f.setText("bootstrap/containers/machine-config-server-"+containerID("mcs")+".log", mcs...)
	f.setText("bootstrap/containers/bootstrap-control-plane/kube-apiserver.log", "I0514 10:09:20 bootstrap control plane log")
	f.setText("bootstrap/pods/"+containerID("pod")[:12]+".log", "rendered")
	f.setText("bootstrap/rpm-ostree/status", "State: idle")
}

// mastersWaiting are masters that booted their config but whose kubelet
// cannot register while the bootstrap's API is not up, and which run no
// etcd yet (the etcd operator puts it there, through that API).
func (f *fixture) mastersWaiting() {
	for i, ip := range masterIPs {
		dir := "control-plane/" + ip
		kl := &journal{host: masterName[i], ident: "kubenswrapper", pid: 2100}
		kl.every(at(12, 0), at(29, 50), 10*time.Second, `E0514 kubelet_node_status.go:96] "Unable to register node with API server" err="Post \"https://api-int.%s:6443/api/v1/nodes\": EOF" node="%s"`, clusterDom, masterName[i])
		f.set(dir+"/journals/kubelet.log", kl.bytes())
		f.del(dir + "/containers/etcd-" + containerID("etcd"+masterName[i]) + ".log")
	}
}

// masterHealthy gathers master i: its kubelet and crio journals, its
// etcd, its network files, as installer-masters-gather.sh does.
func (f *fixture) masterHealthy(i int) {
	dir := "control-plane/" + masterIPs[i]
	name := masterName[i]
	f.setText(dir+"/failed-units.txt", "0 loaded units listed.")
	kl := &journal{host: name, ident: "kubenswrapper", pid: 2100}
	kl.at(at(12, 0), `I0514 kubelet_node_status.go:75] "Attempting to register node" node="%s"`, name)
	kl.at(at(12, 1), `I0514 kubelet_node_status.go:78] "Successfully registered node" node="%s"`, name)
	kl.every(at(12, 30), at(29, 55), 30*time.Second, `I0514 kubelet.go:2400] "SyncLoop (PLEG): event for pod" pod="openshift-etcd/etcd-%s"`, name)
	f.set(dir+"/journals/kubelet.log", kl.bytes())
	cr := &journal{host: name, ident: "crio", pid: 1900}
	cr.every(at(11, 45), at(29, 45), time.Minute, `time="2025-05-14" level=info msg="Started container"`)
	f.set(dir+"/journals/crio.log", cr.bytes())
	for _, u := range []string{"machine-config-daemon-host", "pivot", "openshift-azure-routes", "openshift-gcp-routes"} {
		f.set(dir+"/journals/"+u+".log", []byte("-- No entries --\n"))
	}
	f.set(dir+"/network/ip-addr.txt", ipAddr(masterIPs[i]))
	f.setText(dir+"/network/hostname.txt", name)
	// A retry early in the bootstrap, before the bootstrap's etcd let the
	// master in: normal, and never a diagnosis.
	etcd := []string{
		etcdLine(at(13, i*10), "warn", "prober detected unhealthy status", fmt.Sprintf(`"remote-peer-id":"1","error":"dial tcp %s:2380: connect: connection refused"`, bootIP)),
		etcdLine(at(13, i*10+2), "warn", "prober detected unhealthy status", fmt.Sprintf(`"remote-peer-id":"1","error":"dial tcp %s:2380: connect: connection refused"`, bootIP)),
		etcdLine(at(13, i*10+5), "info", "promoted learner", ""),
	}
	for t := at(14, 0); t.Before(at(30, 0)); t = t.Add(30 * time.Second) {
		etcd = append(etcd, etcdLine(t, "info", "compacted", `"revision":100`))
	}
	f.setText(dir+"/containers/etcd-"+containerID("etcd"+name)+".log", etcd...)
}

// resourcesHealthy are the API objects of a bootstrap whose n masters
// joined: Nodes, CSRs approved, the etcd endpoints, operators.
func (f *fixture) resourcesHealthy(n int) {
	type obj = map[string]any
	var nodes, csrs []obj
	members := map[string]string{}
	for i := 0; i < n; i++ {
		nodes = append(nodes, obj{"metadata": obj{"name": masterName[i], "labels": obj{"node-role.kubernetes.io/master": ""}},
			"status": obj{"conditions": []obj{{"type": "Ready", "status": "True"}}, "addresses": []obj{{"type": "InternalIP", "address": masterIPs[i]}}}})
		csrs = append(csrs, obj{"metadata": obj{"name": "csr-m" + fmt.Sprint(i) + "a", "creationTimestamp": ts(at(12, 0))},
			"spec":   obj{"username": "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper", "signerName": "kubernetes.io/kube-apiserver-client-kubelet"},
			"status": obj{"conditions": []obj{{"type": "Approved", "status": "True"}}}})
		members[fmt.Sprintf("%016x", i+1)] = masterIPs[i]
	}
	f.set("resources/nodes.json", ocJSON(obj{"apiVersion": "v1", "kind": "List", "items": nodes}))
	f.set("resources/csr.json", ocJSON(obj{"apiVersion": "v1", "kind": "List", "items": csrs}))
	f.set("resources/configmaps.json", ocJSON(obj{"apiVersion": "v1", "kind": "List", "items": []obj{
		{"metadata": obj{"name": "kube-root-ca.crt", "namespace": "default"}, "data": obj{"ca.crt": "-----BEGIN CERTIFICATE-----"}},
		{"metadata": obj{"name": "etcd-endpoints", "namespace": "openshift-etcd", "annotations": obj{"alpha.installer.openshift.io/etcd-bootstrap": bootIP}}, "data": members},
	}}))
	f.set("resources/clusteroperators.json", ocJSON(obj{"apiVersion": "v1", "kind": "List", "items": []obj{
		{"metadata": obj{"name": "etcd"}, "status": obj{"conditions": []obj{{"type": "Degraded", "status": "False"}, {"type": "Available", "status": "True"}}}},
	}}))
	f.setText("resources/masters.list", masterName[:n]...)
	f.set("resources/secrets-names.txt", []byte("NAMESPACE NAME TYPE DATA AGE\nkube-system kubeadmin Opaque 1 20m\n"))
	f.set("resources/openapi.json.gz", []byte{0x1f, 0x8b, 0, 0})
}

// ocJSON is oc get -o json's indentation.
func ocJSON(v any) []byte {
	data, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		panic(err)
	}
	return append(data, '\n')
}

// certOptions change the fixture's certificates.
type certOptions struct {
	// expired ends the kube-apiserver's serving certificate before the
	// bundle's time.
	expired bool
	// otherCA signs the bootstrap etcd member's serving certificate with
	// another CA of the same name.
	otherCA bool
}

// certs are the rendered assets' certificates (tls/ and the etcd
// member's), made from fixed seeds, so the bytes are the same every run.
func (f *fixture) certs(t testing.TB, o certOptions) {
	root, rootKey := makeCert(t, "root-ca", 1, nil, nil, true, at(-60, 0), at(-60, 0).Add(10*365*24*time.Hour))
	etcdCA, etcdKey := makeCert(t, "etcd-signer", 2, nil, nil, true, at(-60, 0), at(-60, 0).Add(10*365*24*time.Hour))
	from, notAfter := at(-60, 0), at(-60, 0).Add(24*time.Hour)
	if o.expired {
		from, notAfter = at(-60, 0).Add(-24*time.Hour), at(-90, 0)
	}
	kas, _ := makeCert(t, "api-int."+clusterDom, 3, root, rootKey, false, from, notAfter)
	signer, signerKey := etcdCA, etcdKey
	if o.otherCA {
		signer, signerKey = makeCert(t, "etcd-signer", 9, nil, nil, true, at(-60, 0), at(-60, 0).Add(10*365*24*time.Hour))
	}
	serving, _ := makeCert(t, "system:etcd-server:etcd-client", 4, signer, signerKey, false, at(-60, 0), at(-60, 0).Add(3*365*24*time.Hour))
	f.set("rendered-assets/openshift/tls/root-ca.crt", pemOf(root))
	f.set("rendered-assets/openshift/tls/etcd-ca-bundle.crt", pemOf(etcdCA))
	f.set("rendered-assets/openshift/tls/kube-apiserver-lb-server.crt", pemOf(kas))
	f.set("rendered-assets/openshift/etcd-bootstrap/etc-kubernetes/static-pod-resources/etcd-member/etcd-all-certs/etcd-serving-bootstrap.crt", pemOf(serving))
}

// makeCert makes a certificate for cn, signed by parent (self-signed when
// nil), with an ed25519 key from a seed of serial: deterministic.
func makeCert(t testing.TB, cn string, serial int64, parent *x509.Certificate, parentKey ed25519.PrivateKey, ca bool, from, to time.Time) (*x509.Certificate, ed25519.PrivateKey) {
	t.Helper()
	seed := bytes.Repeat([]byte{byte(serial)}, ed25519.SeedSize)
	key := ed25519.NewKeyFromSeed(seed)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, OrganizationalUnit: []string{"bootlab"}},
		NotBefore: from, NotAfter: to, IsCA: ca, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(nil, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

func pemOf(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}
