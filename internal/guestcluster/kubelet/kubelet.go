package kubelet

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/atomicfile"
	"github.com/bootlab/bootlab/internal/guestcluster/journal"
	"github.com/bootlab/bootlab/internal/guestcluster/kubelet/node"
	"github.com/bootlab/bootlab/internal/rhcos"
)

const (
	// StaticPodDir is the kubelet's static pod directory.
	StaticPodDir = "/etc/kubernetes/manifests"
	// StatePath is where the stand-in records its pods (crictl reads it).
	StatePath = "/run/bootlab/kubelet.json"
	// PodLogDir holds the pods' container logs.
	PodLogDir = "/var/log/pods"
)

// PodState is one static pod as the stand-in runs it (crictl reads it):
// its sandbox and its container, the one it runs.
type PodState struct {
	// ID is the container's id, PodID its sandbox's (64 hex digits each,
	// as CRI-O makes them: crictl shows their first 13).
	ID    string `json:"id"`
	PodID string `json:"podId,omitempty"`
	// UID is the pod's, as the kubelet makes a static pod's.
	UID       string `json:"uid,omitempty"`
	File      string `json:"file"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Container string `json:"container"`
	Image     string `json:"image"`
	// Attempt counts the container's restarts (its log is <Attempt>.log).
	Attempt int       `json:"attempt"`
	Created time.Time `json:"created,omitempty"`
	Started time.Time `json:"started"`
	// Finished and ExitCode are set once the container exited.
	Finished time.Time `json:"finished,omitempty"`
	ExitCode int       `json:"exitCode,omitempty"`
	Running  bool      `json:"running"`
	PID      int       `json:"pid,omitempty"`
	// LogPath is the container's log, in the CRI log format.
	LogPath string `json:"logPath,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// Service is a container the agent plays itself when the node does not
// have its program: it starts it, its log to log (the container's log, as
// its stderr would be), and returns the function that stops it.
type Service func(pod corev1.Pod, c corev1.Container, log io.Writer) (stop func(), err error)

// Pending says why a program missing from PATH may still come (the
// Kubernetes volume not mounted yet), or "" when it will not: a pod
// waiting for its program is retried every sync.
type Pending func(program string) string

// Kubelet is the kubelet stand-in of one node.
type Kubelet struct {
	log *slog.Logger
	// dir is the static pod directory; state and logs default to
	// StatePath and PodLogDir.
	dir, state, logs string
	// services are containers the agent plays itself, by container name
	// (machine-config-server).
	services map[string]Service
	// pending says which missing programs are still to come.
	pending Pending
	// hostIP is the node's IP, the downward API's status.hostIP (and
	// podIP: the static pods share the host's network).
	hostIP string
	// crio is crio.service's journal: the containers created, started
	// and stopped (nil: none kept).
	crio *journal.Writer
	mu   sync.Mutex
	pods map[string]*runningPod // by manifest file
	// down is set once Shutdown began: no pod starts again.
	down bool
}

// New returns a kubelet stand-in watching the static pod directory dir,
// playing services itself.
func New(log *slog.Logger, dir string, services map[string]Service) *Kubelet {
	return &Kubelet{log: log, dir: dir, services: services, pods: map[string]*runningPod{}}
}

// WithPending makes pods whose program is not on PATH yet wait for it
// (retried every sync, their detail saying why) while p says it may come.
func (k *Kubelet) WithPending(p Pending) *Kubelet {
	k.pending = p
	return k
}

// WithHostIP gives the node's IP to the containers that ask the downward
// API for status.hostIP or status.podIP.
func (k *Kubelet) WithHostIP(ip string) *Kubelet {
	k.hostIP = ip
	return k
}

// WithCRIOJournal keeps crio.service's journal in w: the stand-in plays
// the container runtime too.
func (k *Kubelet) WithCRIOJournal(w *journal.Writer) *Kubelet {
	k.crio = w
	return k
}

// WithPaths sets where the stand-in records its pods and their logs
// (StatePath and PodLogDir by default), for a stand-in off the node.
func (k *Kubelet) WithPaths(state, logs string) *Kubelet {
	k.state, k.logs = state, logs
	return k
}

type runningPod struct {
	// pod is the manifest, when it is a Pod.
	pod     *corev1.Pod
	stopSvc func()
	state   PodState
	digest  string
	cmd     *exec.Cmd
	done    chan struct{}
	stopped bool
	// restarts counts restarts after exits, for the back-off.
	restarts int
	// waiting is set while its program is still to come.
	waiting bool
	// backoffSaid is set once the kubelet logged the back-off of this exit.
	backoffSaid bool
	// log is the container's log while it runs.
	log *criLog
}

// crashBackoff is how long after its last start an exited container is
// restarted: 5 s, doubling up to 5 minutes, like the kubelet's
// CrashLoopBackOff (the bootstrap's etcd exits for good once the etcd
// operator removes its member).
func crashBackoff(restarts int) time.Duration {
	d := 5 * time.Second
	for i := 0; i < restarts && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// LoadState reads the pods the stand-in records at path (StatePath).
func LoadState(path string) ([]PodState, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pods []PodState
	return pods, json.Unmarshal(data, &pods)
}

// Run polls the static pod directory every second until ctx ends.
func (k *Kubelet) Run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		k.sync()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sync starts pods whose manifests appeared or changed, stops those whose
// manifests went away, and restarts exited ones (restartPolicy Always).
func (k *Kubelet) sync() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.down {
		return
	}
	seen := map[string]bool{}
	ents, _ := os.ReadDir(k.dir)
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || !(strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml") || strings.HasSuffix(n, ".json")) {
			continue
		}
		p := filepath.Join(k.dir, n)
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		seen[p] = true
		sum := sha256.Sum256(data)
		digest := hex.EncodeToString(sum[:])
		rp := k.pods[p]
		if rp != nil && rp.digest == digest {
			if rp.waiting {
				k.start(p, digest, data, rp, 0) // its program may have come
				continue
			}
			if !rp.state.Running && rp.cmd != nil {
				if time.Since(rp.state.Started) > crashBackoff(rp.restarts) {
					k.start(p, rp.digest, data, rp, rp.restarts+1) // restart after an exit
					k.pods[p].restarts = rp.restarts + 1
				} else {
					k.sayBackoff(rp)
				}
			}
			continue
		}
		if rp != nil {
			k.stop(rp)
		}
		k.start(p, digest, data, nil, 0)
	}
	for p, rp := range k.pods {
		if !seen[p] {
			k.log.Info("kubelet stand-in: static pod manifest removed, stopping the pod", "file", p, "pod", rp.state.Namespace+"/"+rp.state.Name)
			k.stop(rp)
			delete(k.pods, p)
		}
	}
	k.save()
}

// start runs the pod of manifest p: its first container whose program the
// node has; other pods are recorded as not run. A restart (sandbox the
// pod's last run) keeps its sandbox and counts attempt.
func (k *Kubelet) start(p, digest string, data []byte, sandbox *runningPod, attempt int) {
	var pod corev1.Pod
	rp := &runningPod{digest: digest, done: make(chan struct{})}
	k.pods[p] = rp
	now := time.Now().UTC()
	rp.state = PodState{File: p, Created: now, Started: now, ID: newID(), PodID: newID(), UID: staticPodUID(data, p), Attempt: attempt}
	if sandbox != nil {
		rp.state.PodID, rp.state.UID = sandbox.state.PodID, sandbox.state.UID
	}
	if err := yaml.Unmarshal(data, &pod); err != nil || pod.Kind != "Pod" {
		rp.state.Detail = fmt.Sprintf("not a Pod: %v", err)
		close(rp.done)
		return
	}
	rp.state.Name, rp.state.Namespace = pod.Name, pod.Namespace
	rp.pod = &pod
	// The node's own program first: the agent plays only the containers
	// no program of the node runs (the MCS).
	var missing []string
	for _, c := range pod.Spec.Containers {
		argv := append(append([]string(nil), c.Command...), c.Args...)
		if len(argv) == 0 {
			continue
		}
		if bin, err := exec.LookPath(argv[0]); err == nil {
			env := k.containerEnv(c)
			k.startProcess(rp, pod, c, bin, HostArgs(pod, c, expandArgs(argv, env)), env)
			return
		}
		missing = append(missing, argv[0])
	}
	if why := k.stillToCome(missing); why != "" {
		rp.waiting = true
		rp.state.Detail = "not started yet: " + why
		close(rp.done)
		return
	}
	for _, c := range pod.Spec.Containers {
		if svc, ok := k.services[c.Name]; ok {
			k.startService(rp, pod, c, svc)
			return
		}
	}
	rp.state.Detail = "not run: the rehearsal bootstrap plays only pods whose program it has (etcd, and the Kubernetes volume's)"
	close(rp.done)
}

// stillToCome says why one of the missing programs may still come, or "".
func (k *Kubelet) stillToCome(missing []string) string {
	if k.pending == nil {
		return ""
	}
	for _, p := range missing {
		if why := k.pending(p); why != "" {
			return why
		}
	}
	return ""
}

// startService starts container c, which the agent plays itself.
func (k *Kubelet) startService(rp *runningPod, pod corev1.Pod, c corev1.Container, svc Service) {
	rp.state.Container, rp.state.Image = c.Name, c.Image
	log, err := k.openLog(rp, pod, c)
	if err != nil {
		rp.state.Detail = err.Error()
		close(rp.done)
		return
	}
	stderr := log.stream("stderr")
	stop, err := svc(pod, c, stderr)
	if err != nil {
		stderr.flush()
		log.Close()
		rp.state.Detail = fmt.Sprintf("%s failed to start: %v", c.Name, err)
		k.log.Warn("kubelet stand-in: container failed", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
		close(rp.done)
		return
	}
	rp.stopSvc = func() {
		stop()
		stderr.flush()
		log.Close()
	}
	rp.state.Running, rp.state.PID = true, os.Getpid()
	rp.state.Detail = "played by the bootlab agent"
	k.log.Info("kubelet stand-in: started static pod (played by the agent)", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name)
	k.sayCreated(rp)
}

// startProcess runs container c's program bin with argv (host paths), its
// output in the pod's log, and records its exit.
func (k *Kubelet) startProcess(rp *runningPod, pod corev1.Pod, c corev1.Container, bin string, argv, env []string) {
	rp.state.Container, rp.state.Image = c.Name, c.Image
	log, err := k.openLog(rp, pod, c)
	if err != nil {
		rp.state.Detail = err.Error()
		close(rp.done)
		return
	}
	for _, m := range c.VolumeMounts {
		if hp := hostPathOf(pod, m.Name); hp != "" {
			_ = os.MkdirAll(hp, 0o700)
		}
	}
	cmd := exec.Command(bin, argv[1:]...)
	stdout, stderr := log.stream("stdout"), log.stream("stderr")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = append([]string{"PATH=" + rhcos.DefaultPath, "HOME=/root"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		rp.state.Detail = err.Error()
		close(rp.done)
		return
	}
	rp.cmd = cmd
	rp.state.Running, rp.state.PID = true, cmd.Process.Pid
	what := "kubelet stand-in: started static pod"
	if rp.state.Attempt > 0 {
		what = "kubelet stand-in: restarted static pod's container after its back-off"
	}
	k.log.Info(what, "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "containerID", rp.state.ID, "attempt", rp.state.Attempt, "pid", cmd.Process.Pid, "argv", strings.Join(argv, " "))
	k.sayCreated(rp)
	go func() {
		err := cmd.Wait()
		stdout.flush()
		stderr.flush()
		log.Close()
		k.mu.Lock()
		rp.state.Running, rp.state.PID = false, 0
		rp.state.Finished, rp.state.ExitCode = time.Now().UTC(), cmd.ProcessState.ExitCode()
		if !rp.stopped {
			// As a kubelet's FallbackToLogsOnError: the log's end says why.
			last := lastLogText(rp.state.LogPath, 400)
			rp.state.Detail = fmt.Sprintf("exited: %v: %s", err, last)
			k.log.Warn("kubelet stand-in: container exited", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "containerID", rp.state.ID, "err", err, "last", last)
		} else {
			k.crio.Print(journal.PriInfo, fmt.Sprintf("level=info msg=\"Stopped container %s: %s/%s/%s\" id=%s", rp.state.ID, pod.Namespace, pod.Name, c.Name, rp.state.ID))
		}
		k.save()
		k.mu.Unlock()
		close(rp.done)
	}()
}

// openLog opens container c's log for rp's attempt where the kubelet has
// the runtime keep it (kubernetes pkg/kubelet/kuberuntime/helpers.go,
// BuildContainerLogsDirectory and buildContainerLogsPath):
// <PodLogDir>/<namespace>_<name>_<uid>/<container>/<attempt>.log.
func (k *Kubelet) openLog(rp *runningPod, pod corev1.Pod, c corev1.Container) (*criLog, error) {
	dir := filepath.Join(orDefault(k.logs, PodLogDir), pod.Namespace+"_"+pod.Name+"_"+rp.state.UID, c.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rp.state.LogPath = filepath.Join(dir, fmt.Sprintf("%d.log", rp.state.Attempt))
	f, err := os.OpenFile(rp.state.LogPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		return nil, err
	}
	rp.log = newCRILog(f)
	return rp.log, nil
}

// sayCreated writes crio.service's lines of a container it started, in
// CRI-O's logrus form.
func (k *Kubelet) sayCreated(rp *runningPod) {
	s := rp.state
	desc := s.Namespace + "/" + s.Name + "/" + s.Container
	k.crio.Print(journal.PriInfo, fmt.Sprintf("level=info msg=\"Created container %s: %s\" id=%s name=/runtime.v1.RuntimeService/CreateContainer sandboxID=%s", s.ID, desc, s.ID, s.PodID))
	k.crio.Print(journal.PriInfo, fmt.Sprintf("level=info msg=\"Started container\" PID=%d containerID=%s description=%s id=%s name=/runtime.v1.RuntimeService/StartContainer sandboxID=%s", s.PID, s.ID, desc, s.ID, s.PodID))
}

// sayBackoff logs, once an exit, that the container waits its back-off,
// in the kubelet's words (pkg/kubelet/kuberuntime/kuberuntime_manager.go's
// CrashLoopBackOff: "back-off 10s restarting failed container=... pod=...").
func (k *Kubelet) sayBackoff(rp *runningPod) {
	if rp.backoffSaid || rp.stopped {
		return
	}
	rp.backoffSaid = true
	s := rp.state
	k.log.Warn("Error syncing pod, skipping", "pod", s.Namespace+"/"+s.Name, "podUID", s.UID,
		"err", fmt.Sprintf("failed to \"StartContainer\" for \"%s\" with CrashLoopBackOff: \"back-off %s restarting failed container=%s pod=%s_%s(%s)\"",
			s.Container, crashBackoff(rp.restarts), s.Container, s.Name, s.Namespace, s.UID))
}

// newID is a container or sandbox id: 64 random hex digits, as CRI-O's.
func newID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// staticPodUID is a static pod's UID as the kubelet makes it (kubernetes
// pkg/kubelet/config/common.go, applyDefaults): a hash of the pod and of
// where it came from, the node and the file, so it is the same for the
// same manifest and changes with it.
func staticPodUID(manifest []byte, file string) string {
	host, _ := os.Hostname()
	h := fnv.New128a()
	h.Write(manifest)
	fmt.Fprintf(h, "host:%s", host)
	fmt.Fprintf(h, "file:%s", file)
	return hex.EncodeToString(h.Sum(nil))
}

// lastLogText is the text of the container log's last stderr line among
// its last few (else its last line), at most max bytes: why a container
// exited, as a kubelet's FallbackToLogsOnError reads it from the log's
// end. stderr first: the program's stdout and stderr reach the log through
// two pipes, so the order of lines across the two is not kept, and the
// reason for an exit is written to stderr.
func lastLogText(p string, max int64) string {
	var last, lastErr string
	for _, line := range logTailLines(p, 4*max+64) {
		l, err := ParseLogLine([]byte(line))
		if err != nil {
			last = strings.TrimSpace(line)
			continue
		}
		if text := strings.TrimSpace(string(l.Text)); text != "" {
			last = text
			if l.Stream == "stderr" {
				lastErr = text
			}
		}
	}
	if lastErr != "" {
		last = lastErr
	}
	if int64(len(last)) > max {
		last = "..." + last[int64(len(last))-max:]
	}
	return last
}

// logTailLines are the non-empty lines of the last n bytes of the file at
// p (none when there is no file).
func logTailLines(p string, n int64) []string {
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	off := max(fi.Size()-n, 0)
	b := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// stop ends a pod's process group (SIGTERM, then SIGKILL after 10 s).
// Called with k.mu held; it releases the lock while it waits.
func (k *Kubelet) stop(rp *runningPod) {
	if rp.stopSvc != nil {
		rp.stopSvc()
		rp.stopSvc, rp.state.Running, rp.state.PID = nil, false, 0
		close(rp.done)
		return
	}
	if rp.cmd == nil || !rp.state.Running {
		return
	}
	rp.stopped = true
	pid := rp.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	k.mu.Unlock()
	select {
	case <-rp.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-rp.done
	}
	k.mu.Lock()
}

// ShutdownGrace is how long Shutdown waits for the pods after SIGTERM
// before it kills them.
const ShutdownGrace = 10 * time.Second

// Shutdown stops every pod as a node shutdown does, and starts none again:
// the kubelet's graceful node shutdown (kubernetes
// pkg/kubelet/nodeshutdown/nodeshutdown_manager_linux.go) sends its
// containers SIGTERM and kills them once their grace period is over; the
// static pods, critical, go last there and are all there is here. It
// returns when every process exited, or was killed after ShutdownGrace.
func (k *Kubelet) Shutdown(ctx context.Context) {
	k.mu.Lock()
	k.down = true
	var procs []*runningPod
	for _, rp := range k.pods {
		switch {
		case rp.stopSvc != nil:
			rp.stopSvc()
			rp.stopSvc, rp.state.Running, rp.state.PID = nil, false, 0
		case rp.cmd != nil && rp.state.Running:
			rp.stopped = true
			_ = syscall.Kill(-rp.cmd.Process.Pid, syscall.SIGTERM)
			procs = append(procs, rp)
		}
	}
	k.mu.Unlock()
	grace := time.NewTimer(ShutdownGrace)
	defer grace.Stop()
	for _, rp := range procs {
		select {
		case <-rp.done:
			continue
		case <-grace.C:
		case <-ctx.Done():
		}
		for _, left := range procs {
			_ = syscall.Kill(-left.cmd.Process.Pid, syscall.SIGKILL)
		}
		break
	}
	for _, rp := range procs {
		<-rp.done
	}
	k.mu.Lock()
	k.save()
	k.mu.Unlock()
}

// StaticPods are the static pods of the directory that are Pods, with
// whether their container runs: what the node publishes as mirror pods.
func (k *Kubelet) StaticPods() []node.StaticPod {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []node.StaticPod
	for _, rp := range k.pods {
		if rp.pod == nil {
			continue
		}
		out = append(out, node.StaticPod{Pod: *rp.pod.DeepCopy(), Hash: rp.digest, Container: rp.state.Container,
			Running: rp.state.Running, Started: rp.state.Started, Detail: rp.state.Detail})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod.Name < out[j].Pod.Name })
	return out
}

func (k *Kubelet) save() {
	var out []PodState
	for _, rp := range k.pods {
		out = append(out, rp.state)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	data, _ := json.MarshalIndent(out, "", "  ")
	p := orDefault(k.state, StatePath)
	_ = os.MkdirAll(filepath.Dir(p), 0o755)
	_ = atomicfile.Write(p, data, 0o644)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// containerEnv is c's environment as NAME=value: literal values, and the
// downward API's host and pod IP (other sources are left empty).
func (k *Kubelet) containerEnv(c corev1.Container) []string {
	var out []string
	for _, e := range c.Env {
		v := e.Value
		if f := e.ValueFrom; f != nil && f.FieldRef != nil {
			switch f.FieldRef.FieldPath {
			case "status.hostIP", "status.podIP":
				v = k.hostIP
			}
		}
		out = append(out, e.Name+"="+v)
	}
	return out
}

// expandArgs replaces $(NAME) in argv with NAME's value in env, as the
// kubelet expands a container's command and args; an unknown reference
// stays as written, as the kubelet leaves it.
func expandArgs(argv, env []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		for _, kv := range env {
			name, v, _ := strings.Cut(kv, "=")
			a = strings.ReplaceAll(a, "$("+name+")", v)
		}
		out[i] = a
	}
	return out
}

// hostPathOf returns the host path of the pod's hostPath volume name.
func hostPathOf(pod corev1.Pod, name string) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name == name && v.HostPath != nil {
			return v.HostPath.Path
		}
	}
	return ""
}

// HostArgs rewrites container paths in argv (whole arguments or
// --flag=value values) to host paths through the container's hostPath
// volume mounts, as the container would see them.
func HostArgs(pod corev1.Pod, c corev1.Container, argv []string) []string {
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		if hp := hostPathOf(pod, m.Name); hp != "" {
			mounts[m.MountPath] = hp
		}
	}
	mapPath := func(p string) string {
		best := ""
		for mp := range mounts {
			if (p == mp || strings.HasPrefix(p, strings.TrimSuffix(mp, "/")+"/")) && len(mp) > len(best) {
				best = mp
			}
		}
		if best == "" {
			return p
		}
		return mounts[best] + strings.TrimPrefix(p, best)
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "-") && strings.HasPrefix(v, "/") {
			// A list of paths (--tls-sni-cert-key=cert,key): each one.
			vs := strings.Split(v, ",")
			for j := range vs {
				if strings.HasPrefix(vs[j], "/") {
					vs[j] = mapPath(vs[j])
				}
			}
			out[i] = k + "=" + strings.Join(vs, ",")
		} else if strings.HasPrefix(a, "/") {
			out[i] = mapPath(a)
		} else {
			out[i] = a
		}
	}
	return out
}

// Process returns the state of the pod whose container named container
// runs as a process of the node (not one the agent plays), and whether
// one does.
func (k *Kubelet) Process(container string) (PodState, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, rp := range k.pods {
		if rp.cmd != nil && rp.stopSvc == nil && rp.state.Container == container && rp.state.Running {
			return rp.state, true
		}
	}
	return PodState{}, false
}
