package engine

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/bootlab/bootlab/internal/atomicfile"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/probe"
	"github.com/bootlab/bootlab/lab/release"
	"github.com/bootlab/bootlab/lab/upstream"
)

// prepareProbe readies a probe lab before Up creates anything: the probe
// image (cached), the lab CA and MCS certificate (kept in <labDir>/pki,
// 0600, reused), and one Ignition file per node: bootstrap.ign (full),
// master.ign and worker.ign (installer-shaped pointer configs). It returns
// the image the nodes boot: the spec's own kernel and initrd when it names
// them, else the probe image's.
func prepareProbe(ctx context.Context, s *spec.Spec, o PrepareOptions) (spec.Image, error) {
	img := s.Image
	own := img.Kernel != "" && img.Initrd != ""
	if own && s.Rehearsal() && img.RehearsalInitrd == "" {
		return img, &spec.ValidationError{Errs: []spec.FieldError{{Field: "image.rehearsalInitrd",
			Msg: "a rehearsal lab (openshift.manualBootstrap on a probe lab) with its own image.kernel and image.initrd needs the rehearsal initrd built for that kernel too: `bootlab lab probe-image build --rehearsal --kernel K --modules M` prints it"}}}
	}
	if !own || (s.Rehearsal() && img.RehearsalInitrd == "") {
		o.Status.Start("Preparing the probe image")
		rehearsal := ""
		if s.Rehearsal() {
			rehearsal = OpenShiftVersion(s)
		}
		pi, how, err := EnsureProbeImage(ctx, o.Log, "", "", rehearsal)
		if err != nil {
			o.Status.End(false)
			return img, err
		}
		o.Status.End(true)
		o.Log.Debug("probe image", "kernel", pi.Kernel, "initrd", pi.Initrd, "agent", how, "built", pi.Built)
		img.Kernel, img.Initrd = pi.Kernel, pi.Initrd
		img.RehearsalInitrd = pi.RehearsalInitrd
		if img.Cmdline == "" {
			img.Cmdline = pi.Cmdline
		}
		if img.Path == "" {
			img.Path = pi.BaseDisk
		}
	}
	if s.Rehearsal() && img.KubeVolume == "" {
		v, err := prepareKubeVolume(ctx, s, o)
		if err != nil {
			return img, err
		}
		img.KubeVolume = v
	}
	o.Status.Start("Writing the probe Ignition configs")
	if err := WriteProbeIgnition(s); err != nil {
		o.Status.End(false)
		return img, err
	}
	o.Status.End(true)
	return img, nil
}

// prepareKubeVolume returns the read-only volume with the release's
// Kubernetes that a rehearsal lab's bootstrap and masters mount, getting
// the binaries (downloaded, or built: lab/upstream says which and why) and
// making the volume into the cache the first time. The status lines say
// when this lab is the one that pays for them.
func prepareKubeVolume(ctx context.Context, s *spec.Spec, o PrepareOptions) (string, error) {
	version := OpenShiftVersion(s)
	cache := probe.DefaultCacheDir()
	what := "Preparing the Kubernetes volume"
	if _, ok := probe.KubeVolumeCached(cache, version); !ok {
		if err := getKubernetes(ctx, version, cache, o); err != nil {
			return "", err
		}
		what = "Making the Kubernetes volume from the cached Kubernetes binaries (once)"
	}
	o.Status.Start("%s", what)
	v, err := probe.EnsureKubeVolume(ctx, cache, version, o.Log)
	if err != nil {
		o.Status.End(false)
		return "", err
	}
	o.Status.End(true)
	o.Log.Debug("Kubernetes volume", "path", v.Path, "kubernetes", v.Kubernetes, "built", v.Built, "binaries", v.Binaries.Why)
	return v.Path, nil
}

// getKubernetes puts the release's Kubernetes binaries into the cache
// unless they are there: a download has its progress bar to itself, a
// build its spinner; both say why that way.
func getKubernetes(ctx context.Context, version, cache string, o PrepareOptions) error {
	rel, err := release.For(version)
	if err != nil {
		return fmt.Errorf("rehearsal Kubernetes: %w", err)
	}
	pl := upstream.NewPlan(ctx, upstream.Kubernetes(rel),
		upstream.Options{CacheDir: cache, Log: o.Log, Progress: o.Progress, TTY: o.TTY})
	switch {
	case pl.Err != nil:
		return fmt.Errorf("rehearsal Kubernetes of OpenShift %s: %w", rel.OpenShift, pl.Err)
	case pl.Cached != nil:
		return nil
	case pl.Source == upstream.Download:
		o.Status.Infof("Downloading the Kubernetes %s of OpenShift %s into %s (once, then cached): %s", rel.Kubernetes, rel.OpenShift, cache, pl.Why)
	default:
		o.Status.Start("Building the Kubernetes %s of OpenShift %s into %s (only the first lab builds it: about 8 min on 2 cores, then cached): %s",
			rel.Kubernetes, rel.OpenShift, cache, pl.Why)
	}
	b, err := pl.Run(ctx)
	if err != nil {
		o.Status.End(false)
		return fmt.Errorf("rehearsal Kubernetes of OpenShift %s: %w", rel.OpenShift, err)
	}
	if b.Source == upstream.Download {
		o.Status.Infof("Kubernetes %s downloaded in %s, every file checked against %s", b.Version, b.Took.Round(time.Second), release.ChecksumsFile)
	}
	o.Status.End(true)
	return nil
}

// EnsureProbeImage finds the agent and builds (or reuses) the probe image
// in the probe cache; kernel and modules build it for another kernel, and
// a rehearsal OpenShift version also builds the rehearsal initrd carrying
// that release's etcd. It also says where the agent came from.
func EnsureProbeImage(ctx context.Context, log *slog.Logger, kernel, modules, rehearsal string) (*probe.Image, string, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cache, err := CacheRoot()
	if err != nil {
		return nil, "", err
	}
	agent, how, err := probe.FindAgent(ctx, cache, log)
	if err != nil {
		return nil, "", err
	}
	img, err := probe.EnsureImage(ctx, probe.ImageOptions{CacheDir: cache, Kernel: kernel, ModulesDir: modules, Agent: agent,
		Rehearsal: rehearsal != "", OpenShiftVersion: rehearsal, Log: log})
	if err != nil {
		return nil, "", err
	}
	return img, how, nil
}

// ProbeInput maps a lab spec to the probe's Ignition input. The nodes that
// serve ingress are the load balancer's ingress backends (IngressNodes), so
// the agents and haproxy cannot disagree on them. What the configs carry
// beyond the lab CA and MCS pair is issued once and kept in the lab's PKI
// directory (pki.IssuedDir), so the configs come out the same on every
// `lab up` and running nodes are left alone.
func ProbeInput(s *spec.Spec, p *pki.Lab) probe.Input {
	in := probe.Input{
		ClusterDomain:  s.Cluster.Domain(),
		APIAddress:     s.Network.APIAddress,
		IngressAddress: s.Network.IngressAddress,
		PKI:            *p,
		Issuer:         pki.KeepIn(filepath.Join(labdir.PKI(s), pki.IssuedDir)),
	}
	ingress := map[string]bool{}
	for _, n := range s.IngressNodes() {
		ingress[n.Name] = true
	}
	for _, n := range s.Nodes {
		in.Nodes = append(in.Nodes, wire.NodeExpect{Name: n.Name, FQDN: s.FQDN(n), Role: string(n.Role), IP: n.IP, MAC: n.MAC,
			Ingress: ingress[n.Name]})
	}
	return in
}

// WriteProbeIgnition writes each node's probe Ignition (0600, replaced
// atomically), making or reusing the lab PKI; a rehearsal lab's bootstrap
// also gets the lab key, its fixed host key and the release's assets.
func WriteProbeIgnition(s *spec.Spec) error {
	pkiDir := labdir.PKI(s)
	p, err := pki.Ensure(pkiDir, "api-int."+s.Cluster.Domain())
	if err != nil {
		return fmt.Errorf("lab PKI in %s: %w", pkiDir, err)
	}
	in := ProbeInput(s, p)
	if s.Rehearsal() {
		in.Rehearsal = true
		if in.SSHAuthorizedKey, err = SSHPublicKey(s); err != nil {
			return err
		}
		if in.SSHHostKeyPEM, err = EnsureRehearsalHostKey(s); err != nil {
			return err
		}
		version := OpenShiftVersion(s)
		in.Assets = probe.AssetInput{
			ClusterName: s.Cluster.Name, BaseDomain: s.Cluster.BaseDomain, MachineCIDR: s.Network.CIDR,
			Masters: len(s.NodesByRole(spec.RoleMaster)), Workers: len(s.NodesByRole(spec.RoleWorker)),
			Release:        probe.ReleaseFor(version),
			ClusterNetwork: s.OpenShift.ClusterNetwork, ServiceNetwork: s.OpenShift.ServiceNetwork,
		}
	}
	cfgs, err := probe.Generate(in)
	if err != nil {
		return err
	}
	for _, n := range s.Nodes {
		data, err := cfgs.ForRole(string(n.Role))
		if err != nil {
			return fmt.Errorf("nodes[%s].role: %w", n.Name, err)
		}
		path := labdir.Ignition(s, n)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := atomicfile.Write(path, data, 0o600); err != nil {
			return fmt.Errorf("node %s Ignition: %w", n.Name, err)
		}
	}
	return nil
}

// OpenShiftVersion is the release a lab plays (a probe lab's spec may
// leave it unset): its spec's, else the default.
func OpenShiftVersion(s *spec.Spec) string {
	if s.OpenShift.Version != "" {
		return s.OpenShift.Version
	}
	return spec.DefaultOpenShiftVersion
}
