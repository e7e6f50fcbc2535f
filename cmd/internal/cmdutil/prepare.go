package cmdutil

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/images"
	"github.com/bootlab/bootlab/lab/openshift"
	"github.com/bootlab/bootlab/lab/pki"
	"github.com/bootlab/bootlab/lab/probe"
)

// PrepareProbe readies a probe lab before `lab up` creates anything: the
// probe image (cached), the lab CA and MCS certificate (kept in
// <labDir>/pki, 0600, reused), and one Ignition file per node: bootstrap.ign
// (full), master.ign and worker.ign (installer-shaped pointer configs).
func PrepareProbe(ctx context.Context, f *Factory, spec *lab.Spec) error {
	own := spec.Image.Kernel != "" && spec.Image.Initrd != ""
	if own && spec.Rehearsal() && spec.Image.RehearsalInitrd == "" {
		return WithCode(ExitInvalid, fmt.Errorf("image.rehearsalInitrd: a rehearsal lab (openshift.manualBootstrap on a probe lab) with its own image.kernel and image.initrd needs the rehearsal initrd built for that kernel too: `bootlab lab probe-image build --rehearsal --kernel K --modules M` prints it"))
	}
	if !own || (spec.Rehearsal() && spec.Image.RehearsalInitrd == "") {
		f.Status.Start("Preparing the probe image")
		img, how, err := EnsureProbeImage(ctx, f, "", "", spec.Rehearsal())
		if err != nil {
			return err
		}
		f.Status.End(true)
		f.Log.Debug("probe image", "kernel", img.Kernel, "initrd", img.Initrd, "agent", how, "built", img.Built)
		spec.Image.Kernel, spec.Image.Initrd = img.Kernel, img.Initrd
		spec.Image.RehearsalInitrd = img.RehearsalInitrd
		if spec.Image.Cmdline == "" {
			spec.Image.Cmdline = img.Cmdline
		}
		if spec.Image.Path == "" {
			spec.Image.Path = img.BaseDisk
		}
	}
	f.Status.Start("Writing the probe Ignition configs")
	if err := WriteProbeIgnition(spec); err != nil {
		return err
	}
	f.Status.End(true)
	return nil
}

// EnsureProbeImage finds the agent and builds (or reuses) the probe image.
func EnsureProbeImage(ctx context.Context, f *Factory, kernel, modules string, rehearsal bool) (*probe.Image, string, error) {
	cache := probe.DefaultCacheDir()
	agent, how, err := probe.FindAgent(ctx, cache, f.Log)
	if err != nil {
		return nil, "", err
	}
	img, err := probe.EnsureImage(ctx, probe.ImageOptions{CacheDir: cache, Kernel: kernel, ModulesDir: modules, Agent: agent, Rehearsal: rehearsal, Log: f.Log})
	if err != nil {
		return nil, "", err
	}
	return img, how, nil
}

// ProbeInput maps a lab spec to the probe's Ignition input. The nodes that
// serve ingress are the load balancer's ingress backends (IngressNodes), so
// the agents and haproxy cannot disagree on them.
func ProbeInput(spec *lab.Spec, p *pki.Lab) probe.Input {
	in := probe.Input{
		ClusterDomain:  spec.Cluster.Domain(),
		APIAddress:     spec.Network.APIAddress,
		IngressAddress: spec.Network.IngressAddress,
		PKI:            *p,
	}
	ingress := map[string]bool{}
	for _, n := range spec.IngressNodes() {
		ingress[n.Name] = true
	}
	for _, n := range spec.Nodes {
		in.Nodes = append(in.Nodes, probe.NodeExpect{Name: n.Name, FQDN: spec.FQDN(n), Role: string(n.Role), IP: n.IP, MAC: n.MAC,
			Ingress: ingress[n.Name]})
	}
	return in
}

func WriteProbeIgnition(spec *lab.Spec) error {
	p, err := pki.Ensure(filepath.Join(spec.LabDir, "pki"), "api-int."+spec.Cluster.Domain())
	if err != nil {
		return fmt.Errorf("lab PKI in %s: %w", filepath.Join(spec.LabDir, "pki"), err)
	}
	in := ProbeInput(spec, p)
	if spec.Rehearsal() {
		in.Rehearsal = true
		if in.SSHAuthorizedKey, err = lab.SSHPublicKey(spec); err != nil {
			return err
		}
		if in.SSHHostKeyPEM, err = lab.EnsureRehearsalHostKey(spec); err != nil {
			return err
		}
		version := spec.OpenShift.Version
		if version == "" {
			version = lab.DefaultOpenShiftVersion
		}
		in.Assets = probe.AssetInput{
			ClusterName: spec.Cluster.Name, BaseDomain: spec.Cluster.BaseDomain, MachineCIDR: spec.Network.CIDR,
			Masters: len(spec.NodesByRole(lab.RoleMaster)), Workers: len(spec.NodesByRole(lab.RoleWorker)),
			Release: probe.ReleaseFor(version),
		}
	}
	cfgs, err := probe.Generate(in)
	if err != nil {
		return err
	}
	for _, n := range spec.Nodes {
		data, err := cfgs.ForRole(string(n.Role))
		if err != nil {
			return fmt.Errorf("nodes[%s].role: %w", n.Name, err)
		}
		path := spec.IgnitionPath(n)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return fmt.Errorf("write Ignition of %s: %w", n.Name, err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return nil
}

// Prepare runs the profile's preparer: it sets spec.Image and writes one
// Ignition file per node.
func Prepare(ctx context.Context, f *Factory, spec *lab.Spec) error {
	switch spec.Profile {
	case lab.ProfileProbe:
		return PrepareProbe(ctx, f, spec)
	case lab.ProfileOpenShift:
		return PrepareOpenShift(ctx, f, spec)
	}
	return WithCode(ExitInvalid, fmt.Errorf("profile %q has no preparer (profile must be openshift or probe)", spec.Profile))
}

// PrepareOpenShift readies an openshift-profile lab for `lab up`: tools
// (openshift-install, oc), then RHCOS (sets spec.Image.Path to the cached
// qcow2), then the install assets and one Ignition file per node. A bad pull
// secret is refused before anything runs (exit 3).
func PrepareOpenShift(ctx context.Context, f *Factory, spec *lab.Spec) error {
	_, err := openshift.Prepare(ctx, spec, openshift.PrepareOptions{
		Log:      f.Log,
		Status:   f.Status,
		CacheDir: images.DefaultCacheDir(),
		Progress: f.Streams.ErrOut,
		TTY:      f.Streams.ErrTTY,
	})
	return err
}
