package labcmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/images"
	"github.com/bootlab/bootlab/lab/openshift"
)

// prepareOpenShift readies an openshift-profile lab for `lab up`: tools
// (openshift-install, oc), then RHCOS (sets spec.Image.Path to the cached
// qcow2), then the install assets and one Ignition file per node. A bad pull
// secret is refused before anything runs (exit 3).
func prepareOpenShift(ctx context.Context, f *cmdutil.Factory, spec *lab.Spec) error {
	if manual, ok := ctx.Value(manualBootstrapKey{}).(bool); ok {
		spec.OpenShift.ManualBootstrap = manual
	}
	_, err := openshift.Prepare(ctx, spec, openshift.PrepareOptions{
		Log:      f.Log,
		Status:   f.Status,
		CacheDir: images.DefaultCacheDir(),
		Progress: f.Streams.ErrOut,
		TTY:      f.Streams.ErrTTY,
	})
	return err
}

type manualBootstrapKey struct{}

// addManualBootstrapFlag adds --manual-bootstrap to `lab up`: it sets
// openshift.manualBootstrap for this run, carried to prepareOpenShift in the
// command's context (so `up` needs no field of its own for it).
func addManualBootstrapFlag(cmd *cobra.Command) {
	var manual bool
	cmd.Flags().BoolVar(&manual, "manual-bootstrap", false, "mask bootkube.service on the bootstrap node so you drive it with `bootlab stage` (overrides openshift.manualBootstrap)")
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(c, args); err != nil {
				return err
			}
		}
		if c.Flags().Changed("manual-bootstrap") {
			c.SetContext(context.WithValue(c.Context(), manualBootstrapKey{}, manual))
		}
		return nil
	}
}
