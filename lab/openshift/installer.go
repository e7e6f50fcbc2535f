package openshift

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// Installer runs one openshift-install binary.
type Installer struct {
	Path string
	Log  *slog.Logger
	// Env is added to the process environment.
	Env []string
}

// Run runs openshift-install with args, streaming its output through the
// logger line by line (its own level=... msg=... lines keep their level).
func (i *Installer) Run(ctx context.Context, args ...string) error {
	log := i.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cmd := exec.CommandContext(ctx, i.Path, args...)
	cmd.Env = append(cmd.Environ(), i.Env...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	var wg sync.WaitGroup
	var last []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			level, msg := parseInstallerLine(sc.Text())
			log.Log(ctx, level, msg, "from", "openshift-install")
			last = append(last, msg)
			if len(last) > 5 {
				last = last[1:]
			}
		}
		io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	pw.Close()
	wg.Wait()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("`openshift-install %s` failed: %w; its last lines: %s", strings.Join(args, " "), err, strings.Join(last, " | "))
	}
	return nil
}

// Output runs openshift-install with args and returns its stdout.
func (i *Installer) Output(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, i.Path, args...)
	cmd.Env = append(cmd.Environ(), i.Env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("`openshift-install %s` failed: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// PrintStreamJSON returns `openshift-install coreos print-stream-json`.
func (i *Installer) PrintStreamJSON(ctx context.Context) ([]byte, error) {
	return i.Output(ctx, "coreos", "print-stream-json")
}

// parseInstallerLine reads logrus text lines: level=info msg="..."; other
// lines are logged as they are at info.
func parseInstallerLine(line string) (slog.Level, string) {
	rest, ok := strings.CutPrefix(line, "level=")
	if !ok {
		return slog.LevelInfo, line
	}
	lvl, rest, _ := strings.Cut(rest, " ")
	level := slog.LevelInfo
	switch lvl {
	case "debug", "trace":
		level = slog.LevelDebug
	case "warning", "warn":
		level = slog.LevelWarn
	case "error", "fatal":
		level = slog.LevelError
	}
	rest = strings.TrimSpace(rest)
	if m, ok := strings.CutPrefix(rest, "msg="); ok {
		if s, err := strconv.Unquote(m); err == nil {
			return level, s
		}
		return level, m
	}
	return level, rest
}
