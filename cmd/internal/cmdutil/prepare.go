package cmdutil

import (
	"context"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/images"
)

// Prepare runs the profile's preparer (lab.Prepare) with the command's
// logger, status line and progress output, and returns the spec the lab
// is built from; spec itself is not changed.
func Prepare(ctx context.Context, f *Factory, spec *lab.Spec) (*lab.Spec, error) {
	return lab.Prepare(ctx, spec, PrepareOptions(f))
}

// PrepareOptions are the preparer's options of a command: its logger,
// status line, progress output and the download cache.
func PrepareOptions(f *Factory) lab.PrepareOptions {
	return lab.PrepareOptions{
		Log:      f.Log,
		Status:   f.Status,
		CacheDir: images.DefaultCacheDir(),
		Progress: f.Streams.ErrOut,
		TTY:      f.Streams.ErrTTY,
	}
}
