package archtest

import (
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/bootlab/bootlab/"

type pkg struct {
	ImportPath string
	Imports    []string
}

// packages lists every package of the module with its direct imports (test
// files excluded), read with go/build in this process, so the test's result
// is never reused from the cache after a file changed.
func packages(t *testing.T) []pkg {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ctx := build.Default
	ctx.BuildTags = []string{"integration", "e2e"}
	var pkgs []pkg
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "bin") {
			return filepath.SkipDir
		}
		bp, err := ctx.ImportDir(path, 0)
		var noGo *build.NoGoError
		if errors.As(err, &noGo) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		rel, _ := filepath.Rel(root, path)
		pkgs = append(pkgs, pkg{ImportPath: filepath.ToSlash(rel), Imports: bp.Imports})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("found %d packages under %s", len(pkgs), root)
	}
	return pkgs
}

func under(path string, prefixes ...string) bool {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// rule forbids an import edge; why is what the failure says.
type rule struct {
	why  string
	from func(string) bool
	to   func(string) bool
}

// The arrows of docs/architecture.md. A failure names the forbidden edge.
func TestImportArrows(t *testing.T) {
	t.Parallel()
	own := func(imp string) (string, bool) {
		if strings.HasPrefix(imp, module) {
			return strings.TrimPrefix(imp, module), true
		}
		return imp, false
	}
	rules := []rule{
		{why: "only lab/libvirt speaks libvirt (one pure-Go client, one place)",
			from: func(p string) bool { return p != "lab/libvirt" },
			to:   func(i string) bool { return strings.HasPrefix(i, "github.com/digitalocean/go-libvirt") }},
		{why: "internal/kube is the one Kubernetes API client (no client-go: it adds 237 KiB to the static guest agent, and a second client is how the guest once had three)",
			from: func(p string) bool { return true },
			to:   func(i string) bool { return strings.HasPrefix(i, "k8s.io/client-go") }},
		{why: "lab/ and stages/ never import cmd/ or cobra: the CLI is the edge",
			from: func(p string) bool { return under(p, "lab", "stages") },
			to: func(i string) bool {
				o, ok := own(i)
				return ok && under(o, "cmd") || strings.HasPrefix(i, "github.com/spf13/cobra")
			}},
		{why: "stages never imports lab: the bootkube replay runs on any node, lab or not",
			from: func(p string) bool { return under(p, "stages") },
			to:   func(i string) bool { o, ok := own(i); return ok && under(o, "lab") }},
		{why: "nothing the guest agent is built from imports lab/...: lab is the host's (lab/probe's builders pulled lab/gobuild, lab/cache and lab/release into the guest binary); what both sides need is internal/wire's or an internal/ leaf's",
			from: func(p string) bool { return under(p, "cmd/bootlab-probe", "internal/agent") },
			to:   func(i string) bool { o, ok := own(i); return ok && under(o, "lab") }},
		{why: "the probe agent (runs in the guest) imports only the guest-side packages",
			from: func(p string) bool { return under(p, "cmd/bootlab-probe", "internal/agent", "internal/guestcluster") },
			to: func(i string) bool {
				o, ok := own(i)
				return ok && !under(o, "internal/wire", "internal/ignition", "internal/pki", "internal/rhcos", "internal/agent", "internal/guestcluster", "internal/kube", "internal/controlplane", "internal/atomicfile", "internal/procstat", "internal/timing")
			}},
		{why: "the guest agent is imported only by its one-file main (cmd/bootlab-probe) and its own packages",
			from: func(p string) bool { return !under(p, "cmd/bootlab-probe", "internal/agent") },
			to:   func(i string) bool { o, ok := own(i); return ok && under(o, "internal/agent") }},
		{why: "internal/guestcluster, the rehearsal cluster the agent plays, is imported only by the agent (and its main) and its own packages",
			from: func(p string) bool { return !under(p, "cmd/bootlab-probe", "internal/agent", "internal/guestcluster") },
			to:   func(i string) bool { o, ok := own(i); return ok && under(o, "internal/guestcluster") }},
		{why: "internal/guestcluster imports no agent package: the agent wires the cluster's parts, they do not reach back into the agent's boot, report or servers",
			from: func(p string) bool { return under(p, "internal/guestcluster") },
			to:   func(i string) bool { o, ok := own(i); return ok && under(o, "internal/agent") }},
		{why: "internal/agent/endpoints, the MCS, API and ingress stand-ins, imports no other agent package",
			from: func(p string) bool { return p == "internal/agent/endpoints" },
			to:   func(i string) bool { o, ok := own(i); return ok && under(o, "internal/agent") }},
		{why: "lab/probe, the probe lab's host-side builders, imports no lab orchestration: the engine calls it",
			from: func(p string) bool { return p == "lab/probe" },
			to:   func(i string) bool { o, ok := own(i); return ok && o == "lab" }},
		{why: "lab/internal/plan, the spec -> libvirt XML, is pure: it imports no bootlab package but lab/spec, lab/labdir (paths) and internal/wire (the Kubernetes volume's disk serial); no port, no engine",
			from: func(p string) bool { return p == "lab/internal/plan" },
			to: func(i string) bool {
				o, ok := own(i)
				return ok && o != "lab/spec" && o != "lab/labdir" && o != "internal/wire"
			}},
		{why: "lab/cache, the cache root lab/images and lab/probe share, imports no bootlab package but internal/userfile",
			from: func(p string) bool { return p == "lab/cache" },
			to:   func(i string) bool { o, ok := own(i); return ok && o != "internal/userfile" }},
		{why: "internal/userfile, the one way a file a user names is read or written, imports no bootlab package but internal/atomicfile (a leaf): the leaves use it",
			from: func(p string) bool { return p == "internal/userfile" },
			to:   func(i string) bool { o, ok := own(i); return ok && o != "internal/atomicfile" }},
		{why: "internal/wire, what host and guest exchange (the probe config, the report, paths), imports no bootlab package: both sides import it, and neither the other",
			from: func(p string) bool { return p == "internal/wire" },
			to:   func(i string) bool { _, ok := own(i); return ok }},
		{why: "internal/ignition, Ignition configs typed and validated, imports no bootlab package: the host writes them and the guest agent reads them",
			from: func(p string) bool { return p == "internal/ignition" },
			to:   func(i string) bool { _, ok := own(i); return ok }},
		{why: "internal/pki, the lab's certificates shaped like the installer's, imports no bootlab package but internal/atomicfile: the host issues the lab's and the guest agent the ones its renders sign",
			from: func(p string) bool { return p == "internal/pki" },
			to:   func(i string) bool { o, ok := own(i); return ok && o != "internal/atomicfile" }},
		{why: "internal/rhcos, what a probe node has of RHCOS (accounts, PATH, Ignition's files laid down), imports no bootlab package but internal/ignition: the agent and the guest cluster share it",
			from: func(p string) bool { return p == "internal/rhcos" },
			to:   func(i string) bool { o, ok := own(i); return ok && o != "internal/ignition" }},
		{why: "internal/atomicfile, the one way a file is replaced whole, imports no bootlab package: the leaves and the guest agent use it",
			from: func(p string) bool { return p == "internal/atomicfile" },
			to:   func(i string) bool { _, ok := own(i); return ok }},
		{why: "internal/procstat, the one parser of /proc/<pid>/stat, imports no bootlab package: the guest agent and the load balancer use it",
			from: func(p string) bool { return p == "internal/procstat" },
			to:   func(i string) bool { _, ok := own(i); return ok }},
		{why: "internal/timing, the phases' timing lines and the one context-aware sleep, imports no bootlab package: the guest agent uses it",
			from: func(p string) bool { return p == "internal/timing" },
			to:   func(i string) bool { _, ok := own(i); return ok }},
		{why: "lab/release (the version table) and lab/gobuild (the builder of pinned Go programs) import no bootlab package but internal/wire (the names hyperkube answers to, which the guest links): lab/probe and the Kubernetes binaries' builder share them",
			from: func(p string) bool { return p == "lab/release" || p == "lab/gobuild" },
			to:   func(i string) bool { o, ok := own(i); return ok && o != "internal/wire" }},
		{why: "lab/libvirt never imports lab: it implements the port (lab/hypervisor) the orchestration uses",
			from: func(p string) bool { return p == "lab/libvirt" },
			to:   func(i string) bool { o, ok := own(i); return ok && o == "lab" }},
		{why: "lab/hypervisor, the port, and its fake import no bootlab package but lab/spec and lab/host",
			from: func(p string) bool { return under(p, "lab/hypervisor") },
			to: func(i string) bool {
				o, ok := own(i)
				return ok && !under(o, "lab/hypervisor") && o != "lab/spec" && o != "lab/host"
			}},
		{why: "internal/kube, the one Kubernetes REST client and kubeconfig loader, imports no bootlab package: the guest cluster and the host's lab/cluster both speak to an API server through it",
			from: func(p string) bool { return p == "internal/kube" },
			to:   func(i string) bool { _, ok := own(i); return ok }},
		{why: "cluster-bootstrap's create (internal/guestcluster/clusterbootstrap/create) imports no bootlab package but internal/kube, and bootlab's OpenShift CRDs none but the create",
			from: func(p string) bool {
				return p == "internal/guestcluster/clusterbootstrap/create" || p == "internal/guestcluster/clusterbootstrap/openshiftcrds"
			},
			to: func(i string) bool {
				o, ok := own(i)
				return ok && o != "internal/kube" && o != "internal/guestcluster/clusterbootstrap/create"
			}},
		{why: "internal/controlplane, the bootstrap pods the agent renders and stage validate checks, imports no bootlab package: both sides share it",
			from: func(p string) bool { return p == "internal/controlplane" },
			to:   func(i string) bool { _, ok := own(i); return ok }},
		{why: "internal/check, the one check result and printer every check list uses, imports no bootlab package",
			from: func(p string) bool { return p == "internal/check" },
			to:   func(i string) bool { _, ok := own(i); return ok }},
		{why: "the lab, stage and class command groups never import each other; what they share is in cmdutil",
			from: func(p string) bool {
				return under(p, "cmd/internal/labcmd", "cmd/internal/stagecmd", "cmd/internal/classcmd")
			},
			to: func(i string) bool {
				o, ok := own(i)
				return ok && under(o, "cmd/internal/labcmd", "cmd/internal/stagecmd", "cmd/internal/classcmd")
			}},
		{why: "internal/node, the one way bootlab runs commands and moves files on a node, is used by lab and stages and imports neither",
			from: func(p string) bool { return p == "internal/node" },
			to:   func(i string) bool { o, ok := own(i); return ok && under(o, "lab", "stages", "cmd") }},
		{why: "the spec model is a leaf: lab/spec imports no bootlab package but internal/userfile (itself a leaf)",
			from: func(p string) bool { return p == "lab/spec" },
			to:   func(i string) bool { o, ok := own(i); return ok && o != "internal/userfile" }},
		{why: "packages under lab/ take the spec from lab/spec, never from lab: lab is the orchestration that imports them",
			from: func(p string) bool { return strings.HasPrefix(p, "lab/") },
			to:   func(i string) bool { o, ok := own(i); return ok && o == "lab" }},
		{why: "lab/labdir, the lab directory's owner, imports no bootlab package but lab/spec and internal/atomicfile (a leaf)",
			from: func(p string) bool { return p == "lab/labdir" },
			to:   func(i string) bool { o, ok := own(i); return ok && o != "lab/spec" && o != "internal/atomicfile" }},
		{why: "nothing imports cmd/ but cmd/",
			from: func(p string) bool { return !under(p, "cmd") },
			to:   func(i string) bool { o, ok := own(i); return ok && under(o, "cmd") }},
	}
	var broken []string
	for _, p := range packages(t) {
		for _, imp := range p.Imports {
			o, _ := own(imp)
			for _, r := range rules {
				if !r.from(p.ImportPath) || !r.to(imp) {
					continue
				}
				broken = append(broken, fmt.Sprintf("%s -> %s: %s", p.ImportPath, o, r.why))
			}
		}
	}
	for _, b := range broken {
		t.Error(b)
	}
}

// goSources calls fn with every hand-written, non-test Go file of the
// module (its path relative to the root, its content) and fails when it
// finds suspiciously few.
func goSources(t *testing.T, fn func(rel string, data []byte)) {
	t.Helper()
	walkGo(t, false, fn)
}

// walkGo is goSources, with the test files too when tests is true.
func walkGo(t *testing.T, tests bool, fn func(rel string, data []byte)) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "_output") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || (!tests && strings.HasSuffix(path, "_test.go")) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), "// Code generated") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		n++
		fn(filepath.ToSlash(rel), data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("read only %d Go files under %s", n, root)
	}
}

// Only package lab (its engine, lab/internal/engine) writes a lab's state,
// and only under the lab's lock (its runs, or UpdateState): a state file
// written elsewhere could interleave with a running up and lose what it
// recorded. The check reads the non-test sources for a state save or a
// lock taken outside lab, its engine and lab/labdir.
func TestOnlyLabWritesState(t *testing.T) {
	t.Parallel()
	save := regexp.MustCompile(`\.Save\([^)]*LabDir|labdir\.Lock\(|StatePath\([^)]*\)[^\n]*WriteFile`)
	goSources(t, func(rel string, data []byte) {
		if dir := filepath.ToSlash(filepath.Dir(rel)); dir == "lab" || dir == "lab/internal/engine" || dir == "lab/labdir" {
			return
		}
		for i, line := range strings.Split(string(data), "\n") {
			if save.MatchString(line) {
				t.Errorf("%s:%d writes lab state or takes the lab lock outside package lab: call lab.UpdateState: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
	})
}

// cmd/bootlab-probe is one file, main.go, that wires internal/agent/...:
// the agent's products (agent, sshd, stand-ins, kubelet)
// live in packages that are read and tested apart.
func TestProbeMainIsOneFile(t *testing.T) {
	t.Parallel()
	ents, err := os.ReadDir(filepath.Join("..", "..", "cmd", "bootlab-probe"))
	if err != nil {
		t.Fatal(err)
	}
	var goFiles []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".go") {
			goFiles = append(goFiles, e.Name())
		}
	}
	if len(goFiles) != 1 || goFiles[0] != "main.go" {
		t.Errorf("cmd/bootlab-probe has Go files %v, want only main.go: put the agent's code in internal/agent/...", goFiles)
	}
}
