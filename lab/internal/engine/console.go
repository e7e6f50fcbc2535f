package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// ConsoleOptions tune Console.
type ConsoleOptions struct {
	// Follow keeps copying what the node appends until ctx ends.
	Follow bool
	// Raw prints a probe lab's reports as the node wrote them (JSON lines)
	// instead of a readable summary.
	Raw bool
}

// Console copies node n's serial console log (what the VM writes to
// ttyS0, kept by virtlogd in the lab directory) to out. A remote lab's log
// is on the hypervisor's machine and is read there, through h (nil for a
// local lab). A log that does not exist yet says the node has not started.
func Console(ctx context.Context, h host.Host, s *spec.Spec, n spec.Node, out io.Writer, o ConsoleOptions) error {
	path := labdir.ConsoleLog(s, n)
	if s.Profile == spec.ProfileProbe && !o.Raw {
		// Probe reports are one JSON line each: show them as a person reads.
		out = &wire.ReadableConsole{W: out}
	}
	var err error
	where := ""
	if h != nil {
		where = " on " + h.Name()
		err = followHostFile(ctx, h, path, out, o.Follow)
	} else {
		err = followFile(ctx, path, out, o.Follow, 250*time.Millisecond)
	}
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no console log for %s at %s%s: the node has not started yet (`bootlab lab up`)", n.Name, path, where)
	}
	return err
}

// followHostFile is followFile for a file on a (remote) host: read once,
// or followed with tail -F until ctx ends.
func followHostFile(ctx context.Context, h host.Host, path string, out io.Writer, follow bool) error {
	if !follow {
		data, err := h.ReadFile(ctx, path)
		if err != nil {
			return err
		}
		_, err = out.Write(data)
		return err
	}
	q := sshc.Quote(path)
	var errb strings.Builder
	code, err := h.Run(ctx, "[ -e "+q+" ] || exit 66; exec tail -c +1 -F -- "+q+" 2>/dev/null", nil, out, &errb)
	switch {
	case err != nil:
		return err
	case code == 66:
		return &fs.PathError{Op: "read", Path: path, Err: fs.ErrNotExist}
	case code != 0:
		return fmt.Errorf("follow %s on %s: exit status %d %s", path, h.Name(), code, strings.TrimSpace(errb.String()))
	}
	return nil
}

// followFile copies path to out and, when follow is set, keeps copying what
// is appended (starting over if the file is truncated) until ctx ends.
func followFile(ctx context.Context, path string, out io.Writer, follow bool, every time.Duration) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	var off int64
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n, err := io.Copy(out, fh)
		off += n
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		if !follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if fi, err := os.Stat(path); err == nil && fi.Size() < off {
			if _, err := fh.Seek(0, io.SeekStart); err != nil {
				return err
			}
			off = 0
		}
	}
}
