package openshift

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/atomicfile"
	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// SchedulerManifest is the manifest whose spec.mastersSchedulable decides
// whether ordinary pods may run on control-plane nodes.
const SchedulerManifest = "manifests/cluster-scheduler-02-config.yml"

// KubeconfigPath is the admin kubeconfig openshift-install writes.
func KubeconfigPath(s *spec.Spec) string {
	return filepath.Join(labdir.Assets(s), "auth", "kubeconfig")
}

// AssetsOptions are the inputs of CreateAssets.
type AssetsOptions struct {
	Installer  *Installer
	PullSecret string
	SSHKey     string
	Log        *slog.Logger
	Status     *status.Status
}

// AssetsResult says what CreateAssets did.
type AssetsResult struct {
	// Reused is true when the asset directory already held a complete set.
	Reused bool
	// Ignition is the Ignition file written for each node, by node name.
	Ignition map[string]string
}

// assetOutputs are what `create ignition-configs` leaves behind.
var assetOutputs = []string{"bootstrap.ign", "master.ign", "worker.ign", "auth/kubeconfig", "metadata.json"}

// CreateAssets makes the install assets of s in labdir.Assets(s): it writes
// install-config.yaml (and a kept copy), runs `openshift-install create
// manifests`, sets mastersSchedulable by the worker count, runs `create
// ignition-configs`, makes every asset 0600, applies the manual bootstrap
// edit when asked and writes each node's Ignition to labdir.Ignition(s, n).
// A complete asset directory from an earlier run is reused as it is.
func CreateAssets(ctx context.Context, s *spec.Spec, o AssetsOptions) (*AssetsResult, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir := labdir.Assets(s)
	res := &AssetsResult{Ignition: map[string]string{}}
	if complete(dir) {
		if err := sameInstallConfig(s, o); err != nil {
			return nil, err
		}
		res.Reused = true
		log.Info("reusing install assets (remove the directory to make new ones; the bootstrap certificates are valid for 24h)", "dir", dir)
	} else {
		if err := makeAssets(ctx, s, o, dir); err != nil {
			return nil, err
		}
	}
	if err := secureTree(dir); err != nil {
		return nil, err
	}
	o.Status.Start("Writing Ignition for %d nodes", len(s.Nodes))
	if err := writeNodeIgnition(s, dir, res); err != nil {
		o.Status.End(false)
		return nil, err
	}
	o.Status.End(true)
	return res, nil
}

// sameInstallConfig refuses to reuse assets made from another
// install-config: they carry that cluster's names, network, pull secret and
// certificates, so a changed spec would otherwise be silently ignored. The
// error names the changed fields, never their values (one is the pull secret).
func sameInstallConfig(s *spec.Spec, o AssetsOptions) error {
	kept, err := os.ReadFile(labdir.InstallConfigCopy(s))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	ic, err := NewInstallConfig(s, o.PullSecret, o.SSHKey)
	if err != nil {
		return err
	}
	now, err := ic.Marshal()
	if err != nil {
		return err
	}
	var a, b map[string]any
	if err := yaml.Unmarshal(kept, &a); err != nil {
		return fmt.Errorf("parse %s: %w", labdir.InstallConfigCopy(s), err)
	}
	if err := yaml.Unmarshal(now, &b); err != nil {
		return err
	}
	changed := diffKeys("", a, b)
	if len(changed) == 0 {
		return nil
	}
	return fmt.Errorf("the install assets in %s were made from another install-config (changed: %s): they hold that cluster's names, network and certificates; "+
		"put the spec back, or start over with `bootlab lab down` (or remove %s and %s) and `bootlab lab up`",
		labdir.Assets(s), strings.Join(changed, ", "), labdir.Assets(s), labdir.InstallConfigCopy(s))
}

// diffKeys lists the paths where a and b differ, descending into mappings.
func diffKeys(prefix string, a, b map[string]any) []string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []string
	for k := range keys {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		am, aok := a[k].(map[string]any)
		bm, bok := b[k].(map[string]any)
		switch {
		case aok && bok:
			out = append(out, diffKeys(p, am, bm)...)
		case !reflect.DeepEqual(a[k], b[k]):
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func complete(dir string) bool {
	for _, f := range assetOutputs {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}

func makeAssets(ctx context.Context, s *spec.Spec, o AssetsOptions, dir string) error {
	if o.Installer == nil {
		return errors.New("no openshift-install to run")
	}
	// A half-made asset directory (an interrupted run) is bootlab's own:
	// start it over rather than let the installer mix old and new.
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clear asset directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create asset directory: %w", err)
	}
	ic, err := NewInstallConfig(s, o.PullSecret, o.SSHKey)
	if err != nil {
		return err
	}
	data, err := ic.Marshal()
	if err != nil {
		return err
	}
	o.Status.Start("Writing install-config.yaml")
	if err := writeSecret(filepath.Join(dir, "install-config.yaml"), data); err != nil {
		o.Status.End(false)
		return err
	}
	if err := writeSecret(labdir.InstallConfigCopy(s), data); err != nil {
		o.Status.End(false)
		return err
	}
	o.Status.End(true)

	o.Status.Start("openshift-install create manifests")
	if err := o.Installer.Run(ctx, "create", "manifests", "--dir", dir); err != nil {
		o.Status.End(false)
		return err
	}
	schedulable := s.MastersSchedulable()
	if err := SetMastersSchedulable(dir, schedulable); err != nil {
		o.Status.End(false)
		return err
	}
	o.Status.End(true)
	o.Status.Infof("mastersSchedulable: %t (%d workers)", schedulable, len(s.NodesByRole(spec.RoleWorker)))

	o.Status.Start("openshift-install create ignition-configs")
	if err := o.Installer.Run(ctx, "create", "ignition-configs", "--dir", dir); err != nil {
		o.Status.End(false)
		return err
	}
	for _, f := range assetOutputs {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			o.Status.End(false)
			return fmt.Errorf("`openshift-install create ignition-configs` did not write %s in %s", f, dir)
		}
	}
	o.Status.End(true)
	return nil
}

// SetMastersSchedulable sets spec.mastersSchedulable in the scheduler
// manifest of the asset directory dir.
func SetMastersSchedulable(dir string, schedulable bool) error {
	path := filepath.Join(dir, SchedulerManifest)
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("`openshift-install create manifests` did not write %s: %w", SchedulerManifest, err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	if obj["kind"] != "Scheduler" {
		return fmt.Errorf("%s is not a Scheduler manifest (kind %v)", path, obj["kind"])
	}
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	spec["mastersSchedulable"] = schedulable
	obj["spec"] = spec
	out, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}

// secureTree makes every asset file 0600 and directory 0700: Ignition,
// kubeconfigs, kubeadmin-password and the installer state (which holds
// every private key) are secrets.
func secureTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		mode := fs.FileMode(0o600)
		if d.IsDir() {
			mode = 0o700
		}
		return os.Chmod(p, mode)
	})
}

func writeNodeIgnition(s *spec.Spec, dir string, res *AssetsResult) error {
	byRole := map[spec.Role][]byte{}
	for role, file := range map[spec.Role]string{spec.RoleBootstrap: "bootstrap.ign", spec.RoleMaster: "master.ign", spec.RoleWorker: "worker.ign"} {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return fmt.Errorf("read %s: %w", file, err)
		}
		if err := ignition.Validate(data); err != nil {
			return fmt.Errorf("%s from openshift-install: %w", file, err)
		}
		byRole[role] = data
	}
	if s.OpenShift.ManualBootstrap {
		edited, err := ignition.ApplyManualBootstrap(byRole[spec.RoleBootstrap])
		if err != nil {
			return fmt.Errorf("manual bootstrap mode (openshift.manualBootstrap): %w", err)
		}
		byRole[spec.RoleBootstrap] = edited
	}
	for _, n := range s.Nodes {
		data, ok := byRole[n.Role]
		if !ok {
			return fmt.Errorf("node %s: role %q has no Ignition", n.Name, n.Role)
		}
		p := labdir.Ignition(s, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := writeSecret(p, data); err != nil {
			return err
		}
		res.Ignition[n.Name] = p
	}
	return nil
}

// writeSecret writes data 0600 through a temporary file and a rename.
func writeSecret(path string, data []byte) error {
	// Parents stay traversable (qemu reads Ignition from the lab directory);
	// the files themselves are 0600.
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}
