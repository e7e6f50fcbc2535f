package labcmd

import (
	"context"

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
	_, err := openshift.Prepare(ctx, spec, openshift.PrepareOptions{
		Log:      f.Log,
		Status:   f.Status,
		CacheDir: images.DefaultCacheDir(),
		Progress: f.Streams.ErrOut,
		TTY:      f.Streams.ErrTTY,
	})
	return err
}
