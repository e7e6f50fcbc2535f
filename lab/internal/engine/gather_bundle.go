package engine

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bootlab/bootlab/lab/internal/logbundle"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/spec"
)

// GatherNode is what a gather needs of a node: a command run as core
// over the lab's SSH path, its output copied to stdout.
type GatherNode interface {
	Run(ctx context.Context, cmd string, stdout io.Writer) (code int, stderr string, err error)
}

// GatherAPI reads the lab's Kubernetes API (a GET of path, decoded into out).
type GatherAPI interface {
	Get(ctx context.Context, path string, out any) error
}

// GatherSources are where a bootlab bundle's parts come from; the facade
// fills them from the lab's SSH path, API, hypervisor and records.
type GatherSources struct {
	// Dial logs in to node n; done ends the session.
	Dial func(ctx context.Context, n spec.Node) (node GatherNode, done func(), err error)
	// API opens the lab's API (nil: the lab has none, a probe lab).
	API func(ctx context.Context) (GatherAPI, error)
	// LoadBalancer is haproxy's state.
	LoadBalancer func(ctx context.Context) (*loadbalancer.Status, error)
	// Verify is the last `lab verify` of the lab (nil: none was recorded).
	Verify *labdir.VerifyRecord
	// Console copies node n's console log to w (nil: not read).
	Console func(ctx context.Context, n spec.Node, w io.Writer) error
	// Now is the host's clock (nil: time.Now).
	Now func() time.Time
	// DialHost opens a connection from the host to a lab address, for a
	// live collection's tries (nil: directly).
	DialHost func(ctx context.Context, network, addr string) (net.Conn, error)
}

// bundleSink is where a gather puts what it collects: a tarball
// (logbundle.Writer, lab gather) or memory (logbundle.Memory, a live lab
// diagnose). Both filter credentials out and keep the same limits.
type bundleSink interface {
	Dir(rel string) error
	Add(rel string, data []byte) (int64, error)
	AddJSON(rel string, v any) (int64, error)
	Note(rel, why string)
	Missing() []logbundle.Missing
	Size() int64
	// Wants is false for a file the sink would drop: its command is skipped.
	Wants(rel string) bool
}

// gatherer is one bootlab gather in progress.
type gatherer struct {
	w   bundleSink
	s   *spec.Spec
	st  *labdir.State
	src GatherSources
	o   GatherOptions
	// clocks are the nodes' clocks as read, for bootlab/clocks.json.
	clocks []gatherClock
	// live, in a live collection (CollectLive), records its tries.
	live *liveRecord
}

// gatherClock is one entry of bootlab/clocks.json (lab/diagnose's clockFile).
type gatherClock struct {
	Node       string    `json:"node"`
	HostBefore time.Time `json:"hostBefore"`
	NodeTime   time.Time `json:"nodeTime"`
	HostAfter  time.Time `json:"hostAfter"`
}

// gatherBundle is `lab gather` of a probe or rehearsal lab: a bundle in the
// installer's layout, written under the lab directory's gather/ (or o.Dir), of every
// bootstrap and master over the lab's SSH path, the API's objects where it
// answers, and bootlab's own files (bootlab/lab.json, loadbalancer.json,
// clocks.json, verify.json, missing.json). A progress line per node.
func gatherBundle(ctx context.Context, s *spec.Spec, st *labdir.State, o GatherOptions) (_ string, err error) {
	if o.Sources.Now == nil {
		o.Sources.Now = time.Now
	}
	dir := o.Dir
	if dir == "" {
		// The lab's own gather/ directory (labdir.Entries): lab down
		// removes the bundles with the lab, and never a file it did not
		// make, as a bundle loose in the lab directory would be.
		dir = labdir.Gather(s)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("gather: %w", err)
		}
	}
	at := o.Sources.Now()
	w, err := logbundle.Create(dir, at, o.limits())
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			w.Abort()
		}
	}()
	if err := newGatherer(w, s, st, o).collect(ctx, at); err != nil {
		return "", err
	}
	if err := w.Commit(); err != nil {
		return "", err
	}
	return w.Path, nil
}

func newGatherer(w bundleSink, s *spec.Spec, st *labdir.State, o GatherOptions) *gatherer {
	if o.Sources.Now == nil {
		o.Sources.Now = time.Now
	}
	return &gatherer{w: w, s: s, st: st, src: o.Sources, o: o}
}

// collect gathers the lab into the sink: bootlab's lab file, each node
// (bootstrap first), then the API's objects, haproxy's state, the last
// verify, the clocks, the consoles and the stage records.
func (g *gatherer) collect(ctx context.Context, at time.Time) error {
	if err := g.labFile(at); err != nil {
		return err
	}
	for _, n := range append(g.s.NodesByRole(spec.RoleBootstrap), g.s.NodesByRole(spec.RoleMaster)...) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := g.node(ctx, n); err != nil {
			return err
		}
	}
	for _, step := range []func(context.Context) error{g.resources, g.loadBalancer, g.verify, g.clockFile, g.consoles, g.stageRecords} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// labFile is bootlab/lab.json: the lab, so masters that could not be
// gathered are still named and expected.
func (g *gatherer) labFile(at time.Time) error {
	type labNode struct {
		Name string `json:"name"`
		Role string `json:"role"`
		IP   string `json:"ip"`
	}
	l := struct {
		Name       string    `json:"name"`
		Profile    string    `json:"profile"`
		Gathered   time.Time `json:"gathered"`
		APIAddress string    `json:"apiAddress"`
		Nodes      []labNode `json:"nodes"`
	}{Name: g.s.Name, Profile: string(g.s.Profile), Gathered: at.UTC(), APIAddress: g.s.Network.APIAddress, Nodes: []labNode{}}
	for _, n := range g.s.Nodes {
		l.Nodes = append(l.Nodes, labNode{Name: n.Name, Role: string(n.Role), IP: n.IP})
	}
	_, err := g.w.AddJSON("bootlab/lab.json", l)
	return err
}

// nodeDir is node n's directory in the bundle, as the installer names it.
func nodeDir(n spec.Node) string {
	if n.Role == spec.RoleBootstrap {
		return "bootstrap"
	}
	return "control-plane/" + n.IP
}

// node gathers node n and prints its progress line. Only a failure to
// write the bundle is an error: what the node does not show is noted.
func (g *gatherer) node(ctx context.Context, n spec.Node) error {
	dir := nodeDir(n)
	if err := g.w.Dir(dir); err != nil {
		return err
	}
	before, notes, began := g.w.Size(), len(g.w.Missing()), time.Now()
	r := &nodeRun{g: g, n: n, dir: dir, seen: map[string]bool{}}
	nd, done, err := g.src.Dial(ctx, n)
	if err != nil {
		g.w.Note(dir, fmt.Sprintf("could not log in to %s: %v", n.Name, err))
		if g.live != nil {
			g.untried(ctx, n, fmt.Sprintf("bootlab cannot run a command on %s: %v", n.Name, err))
		}
		err = nil
	} else {
		r.nd = nd
		err = r.fromNode(ctx)
		if err == nil && g.live != nil {
			r.tryConnections(ctx)
		}
		done()
	}
	if err == nil && n.Role == spec.RoleBootstrap {
		err = r.fromHost()
	}
	if err != nil {
		return err
	}
	if g.live != nil {
		g.o.Status.Infof("read %s (%s) in %.1fs: %s%s", n.Name, n.IP, time.Since(began).Seconds(), sizeOf(g.w.Size()-before), unseen(len(g.w.Missing())-notes))
		return nil
	}
	g.o.Status.Infof("gathered %s (%s): %s%s", n.Name, n.IP, sizeOf(g.w.Size()-before), unseen(len(g.w.Missing())-notes))
	return nil
}

// unseen is the progress line's tail for n things not seen.
func unseen(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d not seen (bootlab/missing.json)", n)
}

// sizeOf is n bytes in MiB, or KiB below one MiB.
func sizeOf(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// fromNode gathers what node n shows over SSH: its clock, network,
// failed units, journals, containers, static pods, and on the bootstrap
// its service records and rendered assets.
func (r *nodeRun) fromNode(ctx context.Context) error {
	n, dir := r.n, r.dir
	r.clock(ctx)
	for _, c := range []struct{ file, cmd string }{
		{"network/hostname.txt", "hostname"}, {"network/ip-addr.txt", "ip addr"},
		{"network/ip-route.txt", "ip route"}, {"network/resolv.conf", "cat /etc/resolv.conf"},
	} {
		if err := r.output(ctx, dir+"/"+c.file, c.cmd); err != nil {
			return err
		}
	}
	failed := dir + "/failed-units.txt"
	if n.Role == spec.RoleBootstrap {
		failed = "failed-units.txt"
	}
	steps := []func(context.Context) error{
		func(ctx context.Context) error {
			return r.ifHas(ctx, "systemctl", failed, func() error {
				return r.output(ctx, failed, "LANG=POSIX systemctl list-units --state=failed")
			})
		},
		r.journals, r.containers,
		func(ctx context.Context) error {
			if !r.g.w.Wants(dir + "/static-pods/pod.yaml") {
				return nil
			}
			return r.tree(ctx, "/etc/kubernetes/manifests", dir+"/static-pods")
		},
	}
	if n.Role == spec.RoleBootstrap {
		steps = append(steps, r.services, func(ctx context.Context) error {
			return r.tree(ctx, "/opt/openshift", "rendered-assets/openshift")
		})
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// nodeRun gathers one node.
type nodeRun struct {
	g   *gatherer
	n   spec.Node
	nd  GatherNode
	dir string
	// seen are the bundle files the node filled (journals, records), so
	// the host's stage log fills only what the node did not.
	seen map[string]bool
}

// run runs cmd, keeping at most the bundle's file limit of its output
// (its tail, twice over so the writer cuts at a line).
func (r *nodeRun) run(ctx context.Context, cmd string) ([]byte, error) {
	out := &tailBuffer{max: 2 * r.g.limits().File}
	err := r.runTo(ctx, cmd, out)
	return out.buf.Bytes(), err
}

// gatherCommandTimeout bounds one command on a node: a node that hangs
// costs a note, not the gather.
const gatherCommandTimeout = 2 * time.Minute

// runTo runs cmd with its output to w.
func (r *nodeRun) runTo(ctx context.Context, cmd string, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, gatherCommandTimeout)
	defer cancel()
	code, stderr, err := r.nd.Run(ctx, cmd, w)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d: %s", code, firstLine(strings.TrimSpace(stderr)))
	}
	return err
}

func (g *gatherer) limits() logbundle.Limits { return g.o.limits() }

// limits are the bundle's caps, logbundle.DefaultLimits unless set.
func (o GatherOptions) limits() logbundle.Limits {
	if o.Limits == (logbundle.Limits{}) {
		return logbundle.DefaultLimits()
	}
	return o.Limits
}

// firstLine is s's first line.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// output adds cmd's output as the file rel, or notes why there is none.
func (r *nodeRun) output(ctx context.Context, rel, cmd string) error {
	if !r.g.w.Wants(rel) {
		return nil
	}
	data, err := r.run(ctx, cmd)
	if err != nil {
		r.g.w.Note(rel, fmt.Sprintf("`%s` on %s: %v", cmd, r.n.Name, err))
		return nil
	}
	if _, err := r.g.w.Add(rel, data); err != nil {
		return err
	}
	r.seen[rel] = true
	return nil
}

// ifHas runs f when the node has command name, else notes rel as not seen.
func (r *nodeRun) ifHas(ctx context.Context, name, rel string, f func() error) error {
	if _, err := r.run(ctx, "command -v "+name); err != nil {
		r.g.w.Note(rel, fmt.Sprintf("%s has no %s", r.n.Name, name))
		return nil
	}
	return f()
}

// clock reads the node's clock between two readings of the host's.
func (r *nodeRun) clock(ctx context.Context) {
	before := r.g.src.Now()
	out, err := r.run(ctx, "date +%s.%N")
	after := r.g.src.Now()
	if err != nil {
		r.g.w.Note("bootlab/clocks.json", fmt.Sprintf("%s's clock: %v", r.n.Name, err))
		return
	}
	t, err := parseEpoch(strings.TrimSpace(string(out)))
	if err != nil {
		r.g.w.Note("bootlab/clocks.json", fmt.Sprintf("%s's clock: `date +%%s.%%N` printed %.40q", r.n.Name, out))
		return
	}
	r.g.clocks = append(r.g.clocks, gatherClock{Node: r.n.Name, HostBefore: before.UTC(), NodeTime: t, HostAfter: after.UTC()})
}

// parseEpoch reads `date +%s.%N`'s seconds.nanoseconds.
func parseEpoch(s string) (time.Time, error) {
	sec, frac, _ := strings.Cut(s, ".")
	secs, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	var ns int64
	if frac != "" {
		frac = (frac + "000000000")[:9]
		if ns, err = strconv.ParseInt(frac, 10, 64); err != nil {
			return time.Time{}, err
		}
	}
	return time.Unix(secs, ns).UTC(), nil
}

// journalUnits are the units whose journals the installer's gather keeps:
// the bootstrap's (installer-gather.sh) and a master's (installer-masters-gather.sh).
var journalUnits = map[spec.Role][]string{
	spec.RoleBootstrap: {"release-image", "crio-configure", "bootkube", "kubelet", "crio", "approve-csr", "progress"},
	spec.RoleMaster:    {"kubelet", "crio", "machine-config-daemon-firstboot", "machine-config-daemon-host"},
}

// journals are the node's journals of its units, when it has journalctl.
func (r *nodeRun) journals(ctx context.Context) error {
	return r.ifHas(ctx, "journalctl", r.dir+"/journals", func() error {
		for _, u := range journalUnits[r.n.Role] {
			if err := r.output(ctx, r.dir+"/journals/"+u+".log", "journalctl --boot --no-pager --output=short --unit="+u+".service"); err != nil {
				return err
			}
		}
		return nil
	})
}

// containers are crictl's logs and inspections of every container of the
// node, named <name>-<id>.log as the installer's gather names them.
func (r *nodeRun) containers(ctx context.Context) error {
	rel := r.dir + "/containers"
	return r.ifHas(ctx, "crictl", rel, func() error {
		out, err := r.run(ctx, "sudo -n crictl ps -a -o json")
		var ps struct {
			Containers []struct {
				ID       string `json:"id"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			} `json:"containers"`
		}
		if err == nil {
			err = json.Unmarshal(out, &ps)
		}
		if err != nil {
			r.g.w.Note(rel, fmt.Sprintf("`crictl ps -a -o json` on %s: %v", r.n.Name, err))
			return nil
		}
		for _, c := range ps.Containers {
			if !safeName(c.ID) || !safeName(c.Metadata.Name) {
				r.g.w.Note(rel, fmt.Sprintf("a container of %s whose id or name is no file name (%.40q) was not gathered", r.n.Name, c.ID))
				continue
			}
			base := rel + "/" + c.Metadata.Name + "-" + c.ID
			// Both streams, as the installer's gather keeps them
			// (installer-gather.sh: crictl logs ... >&): etcd and the
			// Kubernetes components log to stderr.
			if err := r.output(ctx, base+".log", "sudo -n crictl logs "+c.ID+" 2>&1"); err != nil {
				return err
			}
			if err := r.output(ctx, base+".inspect", "sudo -n crictl inspect "+c.ID); err != nil {
				return err
			}
		}
		return nil
	})
}

// safeName is a container id or name that is one plain file name (and
// safe in a shell command line).
func safeName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return s != "." && s != ".."
}

// services are the bootstrap's service records, /var/log/openshift/*.json.
func (r *nodeRun) services(ctx context.Context) error {
	return r.tree(ctx, "/var/log/openshift", "bootstrap/services")
}

// tree adds the regular files under remote on the node below rel, through
// the bundle's filter (a tar stream read with sudo: the files are root's).
func (r *nodeRun) tree(ctx context.Context, remote, rel string) error {
	out := &capBuffer{max: r.g.limits().Total}
	if err := r.runTo(ctx, "sudo -n tar -C "+remote+" -cf - .", out); err != nil {
		if _, noTar := r.run(ctx, "command -v tar"); noTar != nil {
			// A node without tar (a rehearsal bootstrap): the files
			// one after another, each under a header line.
			return r.catTree(ctx, remote, rel)
		}
		r.g.w.Note(rel, fmt.Sprintf("could not read %s on %s: %v", remote, r.n.Name, err))
		return nil
	}
	if out.cut {
		r.g.w.Note(rel, fmt.Sprintf("%s on %s is larger than the bundle's limit of %s: only its first files are kept", remote, r.n.Name, sizeOf(out.max)))
	}
	tr := tar.NewReader(bytes.NewReader(out.buf.Bytes()))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if !out.cut {
				r.g.w.Note(rel, fmt.Sprintf("%s on %s: the archive is cut short (%v)", remote, r.n.Name, err))
			}
			return nil
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if h.Typeflag != tar.TypeReg || name == "." || strings.HasPrefix(name, "../") || path.IsAbs(name) {
			continue // directories come with their files; links are never followed
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			continue // cut short by the limit: noted above
		}
		if _, err := r.g.w.Add(rel+"/"+name, data); err != nil {
			return err
		}
		r.seen[rel+"/"+name] = true
	}
}

// catHeader starts each file of catTree's output, as tail -n +1 FILES
// heads them, after a NUL: a text file ends anywhere, and holds none.
var catHeader = regexp.MustCompile("\x00==> ([^\x00\n]+) <==\n")

// catTree is tree on a node without tar: bash prints every regular file
// under remote (links never followed), each under a header line.
func (r *nodeRun) catTree(ctx context.Context, remote, rel string) error {
	glob := "**"
	if !r.g.w.Wants(rel+"/manifest.yaml") && r.g.w.Wants(rel+"/tls/ca.crt") {
		glob = "**/*.crt" // only the certificates are read: a live diagnosis
	}
	cmd := `sudo -n bash -c 'shopt -s globstar nullglob dotglob; cd ` + remote + ` && for f in ` + glob + `; do if [ -f "$f" ] && [ ! -L "$f" ]; then printf "\0==> %s <==\n" "$f"; cat "$f"; fi; done'`
	out := &capBuffer{max: r.g.limits().Total}
	if err := r.runTo(ctx, cmd, out); err != nil {
		r.g.w.Note(rel, fmt.Sprintf("could not read %s on %s (it has no tar; bash's cat): %v", remote, r.n.Name, err))
		return nil
	}
	if out.cut {
		r.g.w.Note(rel, fmt.Sprintf("%s on %s is larger than the bundle's limit of %s: only its first files are kept", remote, r.n.Name, sizeOf(out.max)))
	}
	data := out.buf.Bytes()
	heads := catHeader.FindAllSubmatchIndex(data, -1)
	for i, h := range heads {
		end := len(data)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		name := path.Clean(string(data[h[2]:h[3]]))
		if name == "." || strings.HasPrefix(name, "../") || path.IsAbs(name) || (out.cut && i == len(heads)-1) {
			continue // outside, or cut short by the limit (noted above)
		}
		body := data[h[1]:end]
		if _, err := r.g.w.Add(rel+"/"+name, body); err != nil {
			return err
		}
		r.seen[rel+"/"+name] = true
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it (all, when max is 0).
type tailBuffer struct {
	buf bytes.Buffer
	max int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n, _ := t.buf.Write(p)
	if t.max > 0 && int64(t.buf.Len()) > 2*t.max {
		keep := append([]byte(nil), t.buf.Bytes()[int64(t.buf.Len())-t.max:]...)
		t.buf.Reset()
		t.buf.Write(keep)
	}
	return n, nil
}

// capBuffer keeps the first max bytes written to it and drops the rest
// (a tar stream cut there is read up to its last whole file).
type capBuffer struct {
	buf bytes.Buffer
	max int64
	cut bool
}

func (c *capBuffer) Write(p []byte) (int, error) {
	if room := c.max - int64(c.buf.Len()); int64(len(p)) > room {
		c.buf.Write(p[:max(room, 0)])
		c.cut = true
		return len(p), nil
	}
	return c.buf.Write(p)
}
