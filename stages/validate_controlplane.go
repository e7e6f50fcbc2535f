package stages

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/bootlab/bootlab/internal/controlplane"
)

// controlPlanePod checks the bootstrap pod stage 08, 09 or 10 rendered for
// component c: the flags the real binary needs (internal/controlplane,
// the same code the renders use), then the files they name: present,
// each serving certificate signed by the lab CA and paired with its key,
// the etcd client certificate by stage 07's CA bundle, the service-account
// keys a pair. Before stage 13 copies them into the bootstrap secrets
// directory, the files are read where cluster-bootstrap copies them from:
// tls/ and auth/kubeconfig. The flags that name the cluster's networks
// are held to the Network config the render read (podInput).
func controlPlanePod(c controlplane.Component) Check {
	w := controlplane.Wanted(c, controlplane.Input{})
	p := opt("bootstrap-manifests/" + w.File)
	reads := []string{p, opt(controlplane.NetworkManifest), opt(controlplane.FeatureGateManifest)}
	for _, name := range append(controlplane.SecretFiles(c), controlplane.RootCA) {
		reads = append(reads, secretPaths(name)...)
	}
	return Check{Name: "the " + string(c) + " pod in " + p + " runs the real " + string(c) + " with the lab's certificates",
		Reads: reads,
		Run: func(ctx context.Context, e *CheckEnv) error {
			doc, err := readFile(ctx, e.Node, p)
			if err != nil {
				return err
			}
			in, err := podInput(ctx, e)
			if err != nil {
				return err
			}
			if err := controlplane.CheckPod(c, in, doc); err != nil {
				return err
			}
			return controlplane.CheckSecrets(c, func(name string) ([]byte, error) {
				return readSecret(ctx, e, name)
			})
		}}
}

// podInput is what the bootstrap pods depend on beyond OpenShift's
// defaults, read as the renders of stages 08 and 09 read it
// (controlplane.RenderInput): the installer's Network config
// (controlplane.NetworkManifest) and the FeatureGate stage 05 resolved
// (controlplane.FeatureGateManifest) for the release; a file not there
// leaves its part at the defaults.
func podInput(ctx context.Context, e *CheckEnv) (controlplane.Input, error) {
	flags := map[string]string{}
	if !e.Vars.Version.IsZero() {
		flags["payload-version"] = e.Vars.Version.String()
	}
	for flag, file := range map[string]string{"cluster-config-file": controlplane.NetworkManifest, "rendered-manifest-files": controlplane.FeatureGateManifest} {
		p := opt(file)
		if _, err := e.Node.ReadFile(ctx, p); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return controlplane.Input{}, err
		}
		if flag == "rendered-manifest-files" {
			p = path.Dir(p)
		}
		flags[flag] = p
	}
	in, err := controlplane.RenderInput(func(name string) ([]byte, error) { return e.Node.ReadFile(ctx, name) }, flags)
	if err != nil {
		return in, fmt.Errorf("what the render of %s read: %w", opt("manifests"), err)
	}
	return in, nil
}

// secretPaths are where a bootstrap secret is looked for, in order: the
// secrets directory, else where cluster-bootstrap copies it from
// (tls/NAME, auth/kubeconfig).
func secretPaths(name string) []string {
	from := opt("tls/" + name)
	if name == controlplane.Kubeconfig {
		from = opt("auth/kubeconfig")
	}
	return []string{path.Join(controlplane.SecretsDir, name), from}
}

// readSecret reads a bootstrap secret from the first of its secretPaths
// that exists.
func readSecret(ctx context.Context, e *CheckEnv, name string) ([]byte, error) {
	paths := secretPaths(name)
	b, err := e.Node.ReadFile(ctx, paths[0])
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return b, err
	}
	return readFile(ctx, e.Node, paths[1])
}
