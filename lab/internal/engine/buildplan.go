package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/lab/images"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/probe"
	"github.com/bootlab/bootlab/lab/release"
	"github.com/bootlab/bootlab/lab/upstream"
)

// BuildPlan is what `lab up --dry-run` prints: everything Lab.Up would
// make or change, in the order it would, and the accelerator it would use.
type BuildPlan struct {
	Changes []Change
	// Accelerator is the one the plan's domains use, and AcceleratorReason why.
	Accelerator       spec.Accelerator
	AcceleratorReason string
}

// PlanBuild is build without a single write: the same input checks and
// read-only preflight, failing with the same errors, then what the
// preparer would make (lab key, PKI, probe image, Ignition) and Up's own
// steps over a hypervisor that records instead of changing. The preparer
// does not run (it writes files, builds and downloads): the lab's boot
// files are those of the last up, or of the cached probe image. Nothing
// is booted either: where up proves KVM with a test guest, the plan says
// so and plans KVM if it looks usable (preflight's NoTestGuest).
func PlanBuild(ctx context.Context, s *spec.Spec, o BuildOptions) (*BuildPlan, error) {
	o.Preflight.NoTestGuest = true
	c, err := checkBuild(ctx, s, &o)
	if err != nil {
		return nil, err
	}
	defer c.close()
	hv, st := c.hv, c.state
	plan := &BuildPlan{Accelerator: o.Accelerator}
	if c.report != nil {
		plan.Accelerator, plan.AcceleratorReason = c.report.Accelerator, c.report.AcceleratorReason
	}
	built := plannedSpec(s, st)
	plan.Changes = planPrepare(built)
	if plan.Accelerator == "" || plan.Accelerator == spec.AccelAuto {
		plan.Accelerator = s.Accelerator
		if st != nil && st.Accelerator != "" {
			plan.Accelerator = st.Accelerator
		}
		if plan.Accelerator == spec.AccelAuto || plan.Accelerator == "" {
			plan.Accelerator, plan.AcceleratorReason = spec.AccelTCG, "tcg planned: the real up proves KVM first"
		}
	}
	res, err := Up(ctx, hv, built, UpOptions{Log: o.Log, Accelerator: plan.Accelerator, DryRun: true,
		DeferRoles: DeferredRoles(built, o.StartWorkers), Class: o.Class})
	if res != nil {
		plan.Changes = append(plan.Changes, res.Changes...)
	}
	return plan, err
}

// plannedSpec is the spec Up is planned with: the image of the last up, or
// for a probe lab never built, the cached probe image it would reuse.
func plannedSpec(s *spec.Spec, st *labdir.State) *spec.Spec {
	built := *s
	if built.Image != (spec.Image{}) {
		return &built
	}
	if st != nil && st.Spec != nil {
		built.Image = st.Spec.Image
		return &built
	}
	if s.Profile == spec.ProfileProbe && !s.Rehearsal() {
		if k := probe.CachedKernel(probe.DefaultCacheDir()); k != "" {
			dir := filepath.Dir(k)
			built.Image = spec.Image{Kernel: probe.BootKernel(dir), Initrd: filepath.Join(dir, "initramfs.img"),
				Path: filepath.Join(dir, "base.qcow2"), Cmdline: probe.Cmdline}
		}
	}
	return &built
}

// planPrepare lists what build makes before Up: the lab SSH key, and the
// profile preparer's PKI, image and Ignition files.
func planPrepare(s *spec.Spec) []Change {
	var out []Change
	missing := func(p string) bool {
		_, err := os.Lstat(p)
		return errors.Is(err, os.ErrNotExist)
	}
	if key := labdir.SSHKey(s); missing(key) {
		out = append(out, Change{Action: "create", Kind: "sshKey", Name: key, Detail: "ed25519, 0600"})
	}
	switch s.Profile {
	case spec.ProfileProbe:
		if d := labdir.PKI(s); missing(d) {
			out = append(out, Change{Action: "create", Kind: "pki", Name: d, Detail: "lab CA and MCS certificate"})
		}
		if own := s.Image.Kernel != "" && s.Image.Initrd != ""; !own || s.Rehearsal() && s.Image.RehearsalInitrd == "" {
			cache := filepath.Join(probe.DefaultCacheDir(), "probe")
			if probe.CachedKernel(probe.DefaultCacheDir()) == "" {
				out = append(out, Change{Action: "build", Kind: "probeImage", Name: cache, Detail: "would build: no probe image is cached"})
			} else {
				out = append(out, Change{Action: "check", Kind: "probeImage", Name: cache, Detail: "would build only if the agent or kernel changed"})
			}
		}
		if s.Rehearsal() && s.Image.KubeVolume == "" {
			out = append(out, kubeVolumeChange(s))
		}
		out = append(out, ignitionChanges(s)...)
	case spec.ProfileOpenShift:
		if d := labdir.Assets(s); missing(d) {
			out = append(out, Change{Action: "create", Kind: "ignition", Name: d,
				Detail: "openshift-install renders install-config, manifests and Ignition; RHCOS and the tools are downloaded into " + images.DefaultCacheDir() + " unless cached"})
		}
	}
	return out
}

// kubeVolumeChange is the Kubernetes volume a rehearsal lab's preparer
// would build, or find in the cache (then Up uploads it into the pool).
// It asks no download site: whether one answers is Up's question.
func kubeVolumeChange(s *spec.Spec) Change {
	version := OpenShiftVersion(s)
	cache := probe.DefaultCacheDir()
	if p, ok := probe.KubeVolumeCached(cache, version); ok {
		return Change{Action: "check", Kind: "kubeVolume", Name: p, Detail: "cached: the release's Kubernetes, attached read-only to the bootstrap and masters"}
	}
	change := Change{Action: "build", Kind: "kubeVolume", Name: filepath.Join(cache, "kube-volume")}
	if probe.KubeBinaryCached(cache, version) {
		change.Detail = "would make it from the cached Kubernetes binaries of OpenShift " + version + " (seconds, once)"
		return change
	}
	build := "build the Kubernetes of OpenShift " + version + " (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl) from the Go module proxy once: about 8 min on 2 cores, then cached"
	if rel, err := release.For(version); err == nil && len(release.Unpinned(rel.KubernetesArtefacts())) == 0 {
		change.Detail = "would download the official Kubernetes " + rel.Kubernetes + " binaries of OpenShift " + version + " (checksums pinned) when " + upstream.DefaultSites().Kubernetes + " answers, else " + build
		return change
	}
	change.Detail = "would " + build + " (no checksums pinned in " + release.ChecksumsFile + " to download them)"
	return change
}

// ignitionChanges are the probe Ignition files the preparer would make
// (one it rewrites is listed by Up's boot volumes when its content changes).
func ignitionChanges(s *spec.Spec) []Change {
	var out []Change
	seen := map[string]bool{}
	for _, n := range s.Nodes {
		p := labdir.Ignition(s, n)
		if seen[p] {
			continue
		}
		seen[p] = true
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		out = append(out, Change{Action: "create", Kind: "ignition", Name: p, Detail: strings.ToLower(string(n.Role))})
	}
	return out
}
