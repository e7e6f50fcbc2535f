package engine

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/images"
	"github.com/bootlab/bootlab/lab/openshift"
)

// PrepareOptions tune Prepare.
type PrepareOptions struct {
	Log    *slog.Logger
	Status *status.Status
	// CacheDir keeps RHCOS and the tools across labs (default
	// images.DefaultCacheDir()); the probe image has its own cache root.
	CacheDir string
	// Progress receives download progress bars; TTY redraws them in place.
	Progress io.Writer
	TTY      bool
	// PullSecret is an OpenShift lab's pull secret as openshift.CheckInputs
	// returned it (build passes it on, so the file is read once); "" reads
	// openshift.pullSecretFile.
	PullSecret string
}

// Prepare runs the profile's preparer for s before Up: it writes one
// Ignition file per node and finds (or builds, or downloads) what the VMs
// boot. It returns the spec the lab is built from: a copy of s whose Image
// names those files. s itself is not changed, so a caller's validated spec
// stays what the user wrote.
func Prepare(ctx context.Context, s *spec.Spec, o PrepareOptions) (*spec.Spec, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	built := *s
	switch s.Profile {
	case spec.ProfileProbe:
		img, err := prepareProbe(ctx, &built, o)
		if err != nil {
			return nil, err
		}
		built.Image = img
	case spec.ProfileOpenShift:
		cache := o.CacheDir
		if cache == "" {
			cache = images.DefaultCacheDir()
		}
		res, err := openshift.Prepare(ctx, &built, openshift.PrepareOptions{
			Log: o.Log, Status: o.Status, CacheDir: cache, Progress: o.Progress, TTY: o.TTY,
			PullSecret: o.PullSecret,
		})
		if err != nil {
			return nil, err
		}
		built.Image.Path = res.BaseImage
	default:
		return nil, &InputError{Err: fmt.Errorf("profile %q has no preparer (profile must be openshift or probe)", s.Profile)}
	}
	return &built, nil
}
