package cmdutil

import (
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/images"
)

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
