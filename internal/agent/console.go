package agent

import (
	"io"
	"log/slog"
	"sync"
)

// Console serialises whole lines to the console, so reports and logs
// never interleave with each other.
type Console struct {
	mu sync.Mutex
	w  io.Writer
}

func (c *Console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w.Write(p)
}

func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	})).With("src", "bootlab-probe")
}
