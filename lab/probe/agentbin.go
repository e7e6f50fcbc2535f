package probe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ModulePath is bootlab's Go module; AgentPackage the agent's package in it.
const (
	ModulePath   = "github.com/bootlab/bootlab"
	AgentPackage = "./cmd/bootlab-probe"
	AgentBinary  = "bootlab-probe"
)

// FindAgent returns the agent binary to put in the image and how it was
// found, in this order:
//  1. $BOOTLAB_PROBE_AGENT, a path to a built agent;
//  2. when the working directory is inside bootlab's source tree and go is
//     installed: `go build` of ./cmd/bootlab-probe (static, -trimpath, so the
//     same source gives the same bytes and the image cache hits);
//  3. bootlab-probe next to the running bootlab executable;
//  4. bootlab-probe on PATH.
func FindAgent(ctx context.Context, cacheDir string, log *slog.Logger) (path, how string, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if p := os.Getenv("BOOTLAB_PROBE_AGENT"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", "", fmt.Errorf("BOOTLAB_PROBE_AGENT: %w", err)
		}
		return p, "$BOOTLAB_PROBE_AGENT", nil
	}
	if root := sourceRoot(); root != "" {
		if goBin, err := exec.LookPath("go"); err == nil {
			out := filepath.Join(cacheDir, "agent", AgentBinary)
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return "", "", err
			}
			log.Debug("building the probe agent", "source", root)
			cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-buildvcs=false", "-tags", "netgo,osusergo", "-ldflags=-s -w", "-o", out, AgentPackage)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				return "", "", fmt.Errorf("go build %s in %s: %v: %s", AgentPackage, root, err, strings.TrimSpace(stderr.String()))
			}
			return out, "built from " + root, nil
		}
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), AgentBinary)
		if _, err := os.Stat(p); err == nil {
			return p, "next to " + exe, nil
		}
	}
	if p, err := exec.LookPath(AgentBinary); err == nil {
		return p, "on PATH", nil
	}
	return "", "", errors.New("no probe agent: run from bootlab's source tree with go installed, put bootlab-probe next to bootlab or on PATH (make build), or set BOOTLAB_PROBE_AGENT")
}

// sourceRoot returns the bootlab module root containing the working
// directory, or "".
func sourceRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			first, _, _ := strings.Cut(string(data), "\n")
			if strings.TrimSpace(first) == "module "+ModulePath {
				if _, err := os.Stat(filepath.Join(dir, AgentPackage)); err == nil {
					return dir
				}
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
