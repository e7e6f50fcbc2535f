package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/internal/plan"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/internal/userfile"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/labdir"
)

// bootSource is one file a lab's VMs read at start: what names it in an
// error (its spec field, or the node whose Ignition it is).
type bootSource struct {
	what, path string
	node       string // set for an Ignition file
}

// bootSources lists the files the spec's VMs read at start, in one order:
// image.kernel with image.initrd (and image.rehearsalInitrd on a rehearsal
// lab) for direct kernel boot, a rehearsal lab's image.kubeVolume, then
// each node's Ignition. ReadBootFiles and
// CheckBootFiles both walk it, so they never disagree on what a lab boots.
func bootSources(s *spec.Spec) []bootSource {
	var out []bootSource
	if s.Image.Kernel != "" {
		out = append(out, bootSource{what: "image.kernel", path: s.Image.Kernel})
		if s.Image.Initrd != "" {
			out = append(out, bootSource{what: "image.initrd", path: s.Image.Initrd})
		}
		if s.Rehearsal() && s.Image.RehearsalInitrd != "" {
			out = append(out, bootSource{what: "image.rehearsalInitrd", path: s.Image.RehearsalInitrd})
		}
	}
	if s.Rehearsal() && s.Image.KubeVolume != "" {
		out = append(out, bootSource{what: "image.kubeVolume", path: s.Image.KubeVolume})
	}
	for _, n := range s.Nodes {
		out = append(out, bootSource{what: "Ignition of node " + n.Name, path: labdir.Ignition(s, n), node: n.Name})
	}
	return out
}

// ReadBootFiles reads the size and digest of every file the spec's VMs
// read at start (bootSources). A missing kernel or initrd is an error
// naming its field; a node without an Ignition file gets none.
func ReadBootFiles(s *spec.Spec) (plan.BootFiles, error) {
	var b plan.BootFiles
	for _, src := range bootSources(s) {
		f, err := readBootFile(src.what, src.path)
		if src.node != "" && errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return b, err
		}
		switch src.what {
		case "image.kernel":
			b.Kernel = f
		case "image.initrd":
			b.Initrd = f
		case "image.rehearsalInitrd":
			b.RehearsalInitrd = f
		case "image.kubeVolume":
			info, err := ReadImageInfo(src.path)
			if err != nil {
				return b, fmt.Errorf("image.kubeVolume: %w", err)
			}
			if info.Format != "qcow2" {
				return b, fmt.Errorf("image.kubeVolume %s is not a qcow2 image: leave the field out and `lab up` builds the volume", src.path)
			}
			f.VirtualSize = info.VirtualSize
			b.KubeVolume = f
		default:
			if b.Ignition == nil {
				b.Ignition = map[string]*plan.BootFile{}
			}
			b.Ignition[src.node] = f
		}
	}
	return b, nil
}

// CheckBootFiles fails early, naming the node or field and the file, when
// the profile's preparer left a node without Ignition or a kernel or
// initrd is missing: qemu would otherwise fail at start, less helpfully,
// and the accelerator check would boot nothing. The files are on this
// machine for every lab, remote ones too (up uploads them into the pool);
// only a hypervisor that runs no guests (the test driver) goes without.
func CheckBootFiles(s *spec.Spec, caps hypervisor.Capabilities) error {
	if !caps.RunsGuests {
		return nil
	}
	if s.Rehearsal() && s.Image.KubeVolume == "" {
		return errNoKubeVolume
	}
	for _, src := range bootSources(s) {
		_, err := os.Stat(src.path)
		switch {
		case err == nil:
		case src.node != "":
			return fmt.Errorf("node %s has no Ignition at %s (the %s profile's preparer writes it): %w", src.node, src.path, s.Profile, err)
		default:
			return fmt.Errorf("%s %s: %w", src.what, src.path, err)
		}
	}
	return nil
}

// errNoKubeVolume refuses a rehearsal lab whose bootstrap and masters
// would boot without the Kubernetes volume: they run the release's
// kube-apiserver, controller manager and scheduler from it, and nothing
// plays them in its place.
var errNoKubeVolume = errors.New("image.kubeVolume is empty: a rehearsal lab's bootstrap and masters run the release's Kubernetes from that volume, and nothing plays the kube-apiserver without it. " +
	"Leave the field out of the spec and `bootlab lab up` builds the volume (`bootlab cache build kubernetes` does it ahead of time); " +
	"a lab built before rehearsal labs had it: `bootlab lab down`, then `bootlab lab up --manual-bootstrap`")

func readBootFile(what, path string) (*plan.BootFile, error) {
	f, _, err := userfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", what, path, err)
	}
	return &plan.BootFile{Source: plan.AbsPath(path), Size: n, Digest: hex.EncodeToString(h.Sum(nil))[:16]}, nil
}

// qemuOwner is the qemu user of the hypervisor's machine (Debian's
// libvirt-qemu, Fedora's qemu), who must read the Ignition volumes; nil when
// there is none.
func qemuOwner(ctx context.Context, h host.Host) *plan.VolumeOwner {
	out, err := host.Output(ctx, h, `for u in libvirt-qemu qemu; do if id -u "$u" >/dev/null 2>&1; then echo "$(id -u "$u") $(id -g "$u")"; exit 0; fi; done`)
	if err != nil {
		return nil
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return nil
	}
	uid, err1 := strconv.Atoi(f[0])
	gid, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return nil
	}
	return &plan.VolumeOwner{UID: uid, GID: gid}
}

// ensureBootVolumes uploads every boot file whose volume is not there
// complete. The names carry the digests, so an unchanged file is found and
// nothing is sent.
func (r *labRun) ensureBootVolumes(ctx context.Context, vols []plan.BootVolume) (string, error) {
	pool := r.s.PoolName()
	var sent int64
	copied := 0
	// One upload at a time: two libvirt streams at once on one connection
	// hung an upload for ten minutes in CI (the files are small: a kernel,
	// two initrds, a few KiB of Ignition per node).
	n, err := parallel(ctx, vols, 1, func(ctx context.Context, v plan.BootVolume) (bool, error) {
		_, err := r.hv.LookupVolume(ctx, pool, v.Name)
		switch {
		case err == nil:
			r.mu.Lock()
			done := r.state.BootVolumes[v.Name]
			r.mu.Unlock()
			if done || !r.caps.UploadsVolumes {
				return false, nil
			}
			// Present but not recorded complete: an upload cut short.
			if err := r.hv.DeleteVolume(ctx, pool, v.Name); err != nil {
				return false, err
			}
		case !errors.Is(err, hypervisor.ErrNotFound):
			return false, err
		}
		// Not complete until the upload below ends: a record left from a
		// volume deleted by hand must not vouch for this one.
		if err := r.record(func(st *labdir.State) { delete(st.BootVolumes, v.Name) }); err != nil {
			return false, err
		}
		how, err := r.fill(ctx, volumeFill{key: v.Name, name: v.Name, xml: v.XML, source: v.File.Source, size: v.File.Size, what: "upload boot file"})
		if err != nil {
			return false, err
		}
		r.mu.Lock()
		switch how {
		case "uploaded":
			sent += v.File.Size
		case "copied":
			copied++
		}
		r.mu.Unlock()
		return true, r.record(func(st *labdir.State) {
			if st.BootVolumes == nil {
				st.BootVolumes = map[string]bool{}
			}
			st.BootVolumes[v.Name] = true
		})
	})
	if n == 0 {
		return "", err
	}
	if copied > 0 {
		// The class's labs on this host send a boot file once (BootFileShare).
		return fmt.Sprintf("%d uploaded (%d KiB), %d copied on the host", n-copied, sent>>10, copied), err
	}
	return fmt.Sprintf("%d uploaded (%d KiB)", n, sent>>10), err
}

// staleBootVolumes deletes the boot volumes of files the plan no longer
// names (a rebuilt probe image, rewritten Ignition), once the domains name
// the new ones.
func (r *labRun) staleBootVolumes(ctx context.Context, vols []plan.BootVolume) (string, error) {
	pool := r.s.PoolName()
	want := map[string]bool{}
	for _, v := range vols {
		want[v.Name] = true
	}
	have, err := r.hv.Volumes(ctx, pool)
	if err != nil {
		return "", err
	}
	// A checkpoint's domain definitions name the boot files of their day:
	// while the lab has one, old boot files stay (down removes them).
	doms, err := r.ourDomains(ctx)
	if err != nil {
		return "", err
	}
	for _, d := range doms {
		snaps, err := r.hv.Snapshots(ctx, d.Name)
		if err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
			return "", err
		}
		if len(snaps) > 0 {
			r.log.Debug("keeping old boot files: the lab has checkpoints", "domain", d.Name)
			return "", nil
		}
	}
	var gone []string
	for _, v := range have {
		if !strings.HasPrefix(v.Name, plan.BootVolumePrefix) || want[v.Name] {
			continue
		}
		if err := r.hv.DeleteVolume(ctx, pool, v.Name); err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
			return "", err
		}
		gone = append(gone, v.Name)
	}
	if len(gone) == 0 {
		return "", nil
	}
	sort.Strings(gone)
	if err := r.record(func(st *labdir.State) {
		for _, g := range gone {
			delete(st.BootVolumes, g)
		}
	}); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d old boot files removed", len(gone)), nil
}
