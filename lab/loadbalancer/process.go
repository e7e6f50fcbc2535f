package loadbalancer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bootlab/bootlab/internal/procstat"
	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/lab/host"
)

// Result says what Ensure did.
type Result struct {
	// Changed: haproxy.cfg was written (it was absent or different).
	Changed bool
	// Started: no haproxy of ours was running and one was started.
	Started bool
	// Reloaded: a running haproxy was replaced gracefully (-sf).
	Reloaded bool
}

// ErrNotInstalled is returned when the haproxy binary cannot be found.
var ErrNotInstalled = errors.New("haproxy is not installed: run `apt-get install -y haproxy` (Debian/Ubuntu) or `dnf install -y haproxy` (Fedora/RHEL)")

// lookPath finds binary on h's PATH.
func lookPath(ctx context.Context, h host.Host, binary string) (string, error) {
	out, err := host.Output(ctx, h, "command -v "+sshc.Quote(binary))
	if err != nil || strings.TrimSpace(out) == "" {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if h.Remote() {
			return "", fmt.Errorf("on %s: %w", h.Name(), ErrNotInstalled)
		}
		return "", ErrNotInstalled
	}
	return strings.TrimSpace(out), nil
}

// combined runs argv on h and returns its stdout and stderr together.
func combined(ctx context.Context, h host.Host, argv ...string) (string, int, error) {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = sshc.Quote(a)
	}
	// The shell sends stderr to stdout (2>&1); the writer is still locked,
	// since an SSH session copies both streams concurrently.
	var out lockedBuffer
	code, err := h.Run(ctx, strings.Join(q, " ")+" 2>&1", nil, &out, &out)
	return out.String(), code, err
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Check runs `haproxy -c -f cfgPath` on h (nil: this machine), which parses
// the file without binding anything.
func Check(ctx context.Context, h host.Host, binary, cfgPath string) error {
	if h == nil {
		h = host.Local{}
	}
	if binary == "" {
		binary = "haproxy"
	}
	bin, err := lookPath(ctx, h, binary)
	if err != nil {
		return fmt.Errorf("check %s: %w", cfgPath, err)
	}
	return checkWith(ctx, h, bin, cfgPath)
}

// checkWith is Check with the binary's path already found on h.
func checkWith(ctx context.Context, h host.Host, bin, cfgPath string) error {
	out, code, err := combined(ctx, h, bin, "-c", "-f", cfgPath)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d", code)
	}
	if err != nil {
		return fmt.Errorf("haproxy -c -f %s rejected the configuration: %w\n%s", cfgPath, err, strings.TrimSpace(out))
	}
	return nil
}

// Ensure makes the running load balancer match c: it renders haproxy.cfg and,
// when the file changed or our haproxy is not running, writes it atomically
// (after `haproxy -c` accepted it), starts haproxy or reloads it with -sf,
// and confirms the new process runs. Unchanged and running: it does nothing.
func Ensure(ctx context.Context, c Config, log *slog.Logger) (Result, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var res Result
	data, err := Render(c)
	if err != nil {
		return res, err
	}
	h := c.host()
	bin, err := lookPath(ctx, h, c.binary())
	if err != nil {
		return res, err
	}
	old, err := h.ReadFile(ctx, c.ConfigPath())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("read %s: %w", c.ConfigPath(), err)
	}
	res.Changed = !bytes.Equal(old, data)
	oldPID, running := runningPID(ctx, c)
	if !res.Changed && running {
		log.Debug("load balancer unchanged and running", "pid", oldPID, "config", c.ConfigPath())
		return res, nil
	}
	if res.Changed {
		if err := writeChecked(ctx, c, bin, data); err != nil {
			return res, err
		}
		log.Debug("wrote load balancer config", "path", c.ConfigPath())
	}
	args := []string{"-D", "-f", c.ConfigPath(), "-p", c.PIDPath()}
	if running {
		// Hand the health states over, so a DOWN server does not start the
		// new process as UP (and an UP one is not re-checked from scratch).
		if state, err := adminCommand(ctx, h, c.SocketPath(), "show servers state"); err == nil {
			if err := h.WriteFile(ctx, c.StatePath(), []byte(state), 0o600); err != nil {
				log.Debug("could not save server states before reload", "err", err)
			}
		} else {
			log.Debug("could not read server states before reload", "err", err)
		}
		args = append(args, "-sf", strconv.Itoa(oldPID))
		res.Reloaded = true
	} else {
		// A stale pid file of a dead or foreign process must not be trusted.
		_, _, _ = combined(ctx, h, "rm", "-f", "--", c.StatePath(), c.PIDPath())
		res.Started = true
	}
	out, code, err := combined(ctx, h, append([]string{bin}, args...)...)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d", code)
	}
	if err != nil {
		return Result{Changed: res.Changed}, fmt.Errorf("start haproxy on %s (%s %s): %w\n%s", h.Name(), bin, strings.Join(args, " "), err, strings.TrimSpace(out))
	}
	pid, err := waitRunning(ctx, c, oldPID)
	if err != nil {
		return Result{Changed: res.Changed}, err
	}
	log.Debug("load balancer running", "pid", pid, "started", res.Started, "reloaded", res.Reloaded)
	return res, nil
}

// writeChecked writes data beside the config, lets haproxy check it, then
// renames it into place, so a rejected config never replaces a good one.
func writeChecked(ctx context.Context, c Config, bin string, data []byte) error {
	h := c.host()
	tmp := c.ConfigPath() + ".new"
	// WriteFile creates the directory.
	if err := h.WriteFile(ctx, tmp, data, 0o644); err != nil {
		return fmt.Errorf("write %s on %s: %w", tmp, h.Name(), err)
	}
	if err := checkWith(ctx, h, bin, tmp); err != nil {
		_, _, _ = combined(ctx, h, "rm", "-f", "--", tmp)
		return err
	}
	if out, code, err := combined(ctx, h, "mv", "-f", "--", tmp, c.ConfigPath()); err != nil || code != 0 {
		return fmt.Errorf("install %s on %s: %v %s", c.ConfigPath(), h.Name(), err, strings.TrimSpace(out))
	}
	return nil
}

// waitRunning waits (bounded) until the pid file names a live haproxy of
// ours other than oldPID.
func waitRunning(ctx context.Context, c Config, oldPID int) (int, error) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for range 100 {
		if pid, ok := runningPID(ctx, c); ok && pid != oldPID {
			return pid, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-t.C:
		}
	}
	return 0, fmt.Errorf("haproxy was started on %s but %s does not name a running haproxy after 5s: run `%s -d -f %s` there to see why", c.host().Name(), c.PIDPath(), c.binary(), c.ConfigPath())
}

// Stop ends our haproxy (only when the pid file names a haproxy started with
// our config) and removes the pid file, admin socket and state file. Stopping a stopped
// load balancer is not an error.
func Stop(ctx context.Context, c Config) error {
	h := c.host()
	pid, ok := runningPID(ctx, c)
	if ok {
		if err := kill(ctx, h, pid, "TERM"); err != nil {
			return err
		}
		if err := waitGone(ctx, h, pid); err != nil {
			return err
		}
	}
	if out, code, err := combined(ctx, h, "rm", "-f", "--", c.PIDPath(), c.SocketPath(), c.StatePath()); err != nil || code != 0 {
		return fmt.Errorf("remove the load balancer's pid file and socket on %s: %v %s", h.Name(), err, strings.TrimSpace(out))
	}
	return nil
}

// kill sends sig to pid on h; a process already gone is no error.
func kill(ctx context.Context, h host.Host, pid int, sig string) error {
	out, code, err := combined(ctx, h, "kill", "-"+sig, strconv.Itoa(pid))
	if err != nil {
		return fmt.Errorf("stop haproxy pid %d on %s: %w", pid, h.Name(), err)
	}
	if code != 0 && alive(ctx, h, pid) {
		return fmt.Errorf("stop haproxy pid %d on %s: %s", pid, h.Name(), strings.TrimSpace(out))
	}
	return nil
}

func waitGone(ctx context.Context, h host.Host, pid int) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for i := range 200 {
		if !alive(ctx, h, pid) {
			return nil
		}
		if i == 100 {
			_ = kill(ctx, h, pid, "KILL")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return fmt.Errorf("haproxy pid %d did not exit after SIGTERM and SIGKILL", pid)
}

// runningPID reads the pid file and reports whether that pid is a live
// haproxy running our config file.
func runningPID(ctx context.Context, c Config) (int, bool) {
	h := c.host()
	data, err := h.ReadFile(ctx, c.PIDPath())
	if err != nil {
		return 0, false
	}
	// haproxy writes one pid per line (one per process); we run one.
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0, false
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, isOurHAProxy(ctx, h, pid, c.ConfigPath())
}

// isOurHAProxy checks /proc/<pid>/cmdline: a haproxy whose -f is cfgPath.
// A recycled pid, a zombie or another lab's haproxy is not ours.
func isOurHAProxy(ctx context.Context, h host.Host, pid int, cfgPath string) bool {
	data, err := h.ReadFile(ctx, "/proc/"+strconv.Itoa(pid)+"/cmdline")
	if err != nil || len(data) == 0 {
		return false
	}
	args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	if !strings.Contains(args[0], "haproxy") {
		return false
	}
	for i := 1; i+1 < len(args); i++ {
		if args[i] == "-f" && args[i+1] == cfgPath {
			return alive(ctx, h, pid)
		}
	}
	return false
}

// alive is true for a process that exists and is not a zombie.
func alive(ctx context.Context, h host.Host, pid int) bool {
	data, err := h.ReadFile(ctx, "/proc/"+strconv.Itoa(pid)+"/stat")
	if err != nil {
		return false
	}
	st, err := procstat.Parse(data)
	return err == nil && !st.Gone()
}

// Plan says what Ensure would do with c, changing nothing: "start" (not
// running), "reload" (running, config changed) or "" (running as c says).
func Plan(ctx context.Context, c Config) (string, error) {
	data, err := Render(c)
	if err != nil {
		return "", err
	}
	old, err := c.host().ReadFile(ctx, c.ConfigPath())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", c.ConfigPath(), err)
	}
	_, running := runningPID(ctx, c)
	switch {
	case !running:
		return "start", nil
	case !bytes.Equal(old, data):
		return "reload", nil
	}
	return "", nil
}
