package loadbalancer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
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

// Check runs `haproxy -c -f cfgPath`, which parses the file without binding anything.
func Check(ctx context.Context, binary, cfgPath string) error {
	if binary == "" {
		binary = "haproxy"
	}
	bin, err := exec.LookPath(binary)
	if err != nil {
		return fmt.Errorf("check %s: %w", cfgPath, ErrNotInstalled)
	}
	out, err := exec.CommandContext(ctx, bin, "-c", "-f", cfgPath).CombinedOutput()
	if err != nil {
		return fmt.Errorf("haproxy -c -f %s rejected the configuration: %w\n%s", cfgPath, err, strings.TrimSpace(string(out)))
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
	bin, err := exec.LookPath(c.binary())
	if err != nil {
		return res, ErrNotInstalled
	}
	old, err := os.ReadFile(c.ConfigPath())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("read %s: %w", c.ConfigPath(), err)
	}
	res.Changed = !bytes.Equal(old, data)
	oldPID, running := runningPID(c)
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
		if state, err := adminCommand(ctx, c.SocketPath(), "show servers state"); err == nil {
			if err := os.WriteFile(c.StatePath(), []byte(state), 0o600); err != nil {
				log.Debug("could not save server states before reload", "err", err)
			}
		} else {
			log.Debug("could not read server states before reload", "err", err)
		}
		args = append(args, "-sf", strconv.Itoa(oldPID))
		res.Reloaded = true
	} else {
		_ = os.Remove(c.StatePath())
		// A stale pid file of a dead or foreign process must not be trusted.
		_ = os.Remove(c.PIDPath())
		res.Started = true
	}
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return Result{Changed: res.Changed}, fmt.Errorf("start haproxy (%s %s): %w\n%s", bin, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
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
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("create load balancer directory: %w", err)
	}
	tmp := c.ConfigPath() + ".new"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := Check(ctx, bin, tmp); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, c.ConfigPath()); err != nil {
		return fmt.Errorf("install %s: %w", c.ConfigPath(), err)
	}
	return nil
}

// waitRunning waits (bounded) until the pid file names a live haproxy of
// ours other than oldPID.
func waitRunning(ctx context.Context, c Config, oldPID int) (int, error) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for range 100 {
		if pid, ok := runningPID(c); ok && pid != oldPID {
			return pid, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-t.C:
		}
	}
	return 0, fmt.Errorf("haproxy was started but %s does not name a running haproxy after 5s: run `%s -d -f %s` to see why", c.PIDPath(), c.binary(), c.ConfigPath())
}

// Stop ends our haproxy (only when the pid file names a haproxy started with
// our config) and removes the pid file, admin socket and state file. Stopping a stopped
// load balancer is not an error.
func Stop(ctx context.Context, c Config) error {
	pid, ok := runningPID(c)
	if ok {
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("stop haproxy pid %d: %w", pid, err)
		}
		if err := waitGone(ctx, pid); err != nil {
			return err
		}
	}
	for _, p := range []string{c.PIDPath(), c.SocketPath(), c.StatePath()} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", p, err)
		}
	}
	return nil
}

func waitGone(ctx context.Context, pid int) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for i := range 200 {
		if !alive(pid) {
			return nil
		}
		if i == 100 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
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
func runningPID(c Config) (int, bool) {
	data, err := os.ReadFile(c.PIDPath())
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
	return pid, isOurHAProxy(pid, c.ConfigPath())
}

// isOurHAProxy checks /proc/<pid>/cmdline: a haproxy whose -f is cfgPath.
// A recycled pid, a zombie or another lab's haproxy is not ours.
func isOurHAProxy(pid int, cfgPath string) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(data) == 0 {
		return false
	}
	args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	if !strings.Contains(args[0], "haproxy") {
		return false
	}
	for i := 1; i+1 < len(args); i++ {
		if args[i] == "-f" && args[i+1] == cfgPath {
			return alive(pid)
		}
	}
	return false
}

// alive is true for a process that exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

// Plan says what Ensure would do with c, changing nothing: "start" (not
// running), "reload" (running, config changed) or "" (running as c says).
func Plan(c Config) (string, error) {
	data, err := Render(c)
	if err != nil {
		return "", err
	}
	old, err := os.ReadFile(c.ConfigPath())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", c.ConfigPath(), err)
	}
	_, running := runningPID(c)
	switch {
	case !running:
		return "start", nil
	case !bytes.Equal(old, data):
		return "reload", nil
	}
	return "", nil
}
