package cmdutil

import (
	"github.com/bootlab/bootlab/lab"
)

// PrepareOptions are the preparer's options of a command: its logger,
// status line and progress output (the download cache is the engine's
// default, images.DefaultCacheDir).
func PrepareOptions(f *Factory) lab.PrepareOptions {
	return lab.PrepareOptions{
		Log:      f.Log,
		Status:   f.Status,
		Progress: f.Streams.ErrOut,
		TTY:      f.Streams.ErrTTY,
	}
}
