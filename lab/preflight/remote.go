package preflight

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/loadbalancer"
)

// remoteFacts looks at a remote hypervisor's machine through h: every fact
// preflight reads there with a command or a file read over its SSH
// connection. Facts already set in base are kept (tests).
func remoteFacts(ctx context.Context, h host.Host, base HostFacts) HostFacts {
	f := base
	out := func(cmd string) (string, error) { return host.Output(ctx, h, cmd) }
	if f.Where == "" {
		f.Where = h.Name()
	}
	if f.ReadFile == nil {
		f.ReadFile = func(p string) ([]byte, error) { return h.ReadFile(ctx, p) }
	}
	if f.LookPath == nil {
		f.LookPath = func(name string) (string, error) {
			p, err := out("command -v " + sshc.Quote(name))
			if err != nil || strings.TrimSpace(p) == "" {
				return "", fmt.Errorf("%s not found on %s", name, h.Name())
			}
			return strings.TrimSpace(p), nil
		}
	}
	if f.LookupUser == nil {
		f.LookupUser = func(name string) (*HostUser, error) {
			o, err := out(fmt.Sprintf("id -u %[1]s && id -G %[1]s", sshc.Quote(name)))
			if err != nil {
				return nil, err
			}
			return parseIDOutput(name, o)
		}
	}
	if f.Stat == nil {
		f.Stat = remoteStat(ctx, h)
	}
	if f.FreeBytes == nil {
		f.FreeBytes = remoteFreeBytes(ctx, h)
	}
	if f.Routes == nil {
		f.Routes = func() ([]HostRoute, error) {
			data, err := h.ReadFile(ctx, "/proc/net/route")
			if err != nil {
				return nil, fmt.Errorf("read the routes of %s: %w", h.Name(), err)
			}
			return parseProcRoutes(string(data))
		}
	}
	if f.WriteTemp == nil {
		f.WriteTemp = remoteWriteTemp(ctx, h)
	}
	if f.HAProxyCheck == nil {
		f.HAProxyCheck = func(ctx context.Context, binary, cfgPath string) error {
			return loadbalancer.Check(ctx, h, binary, cfgPath)
		}
	}
	if f.KVMSmoke == nil {
		// The accelerator of a remote lab is what its libvirt offers: no
		// test guest is booted there.
		f.KVMSmoke = func(context.Context, string) error { return errors.New("not run on a remote host") }
	}
	return f
}

// remoteStat stats a path on h (following links).
func remoteStat(ctx context.Context, h host.Host) func(string) (*FileOwner, error) {
	return func(p string) (*FileOwner, error) {
		o, err := host.Output(ctx, h, fmt.Sprintf("[ -e %[1]s ] || exit 66; stat -L -c '%%a %%u %%g %%F' -- %[1]s", sshc.Quote(p)))
		if err != nil {
			if strings.Contains(err.Error(), "exit status 66") {
				return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
			}
			return nil, err
		}
		return parseStatOutput(p, o)
	}
}

// remoteFreeBytes is the space free for a path on h, from df.
func remoteFreeBytes(ctx context.Context, h host.Host) func(string) (uint64, error) {
	return func(p string) (uint64, error) {
		o, err := host.Output(ctx, h, "df -P -B1 -- "+sshc.Quote(p)+" | tail -n 1")
		if err != nil {
			return 0, err
		}
		fields := strings.Fields(o)
		if len(fields) < 4 {
			return 0, fmt.Errorf("df on %s: unexpected output %q", h.Name(), o)
		}
		return strconv.ParseUint(fields[3], 10, 64)
	}
}

// remoteWriteTemp writes data to a private temporary file on h and
// returns its path and what removes it.
func remoteWriteTemp(ctx context.Context, h host.Host) func([]byte) (string, func(), error) {
	return func(data []byte) (string, func(), error) {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		p := "/tmp/bootlab-preflight-" + hex.EncodeToString(b) + ".cfg"
		if err := h.WriteFile(ctx, p, data, 0o600); err != nil {
			return "", nil, err
		}
		return p, func() { _, _ = host.Output(ctx, h, "rm -f -- "+sshc.Quote(p)) }, nil
	}
}

// parseIDOutput reads `id -u NAME && id -G NAME`.
func parseIDOutput(name, out string) (*HostUser, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("id %s: unexpected output %q", name, out)
	}
	uid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil {
		return nil, fmt.Errorf("id %s: unexpected output %q", name, out)
	}
	u := &HostUser{Name: name, UID: uid}
	for _, g := range strings.Fields(lines[1]) {
		if gid, err := strconv.Atoi(g); err == nil {
			u.GIDs = append(u.GIDs, gid)
		}
	}
	return u, nil
}

// parseStatOutput reads `stat -L -c '%a %u %g %F'`.
func parseStatOutput(path, out string) (*FileOwner, error) {
	f := strings.SplitN(strings.TrimSpace(out), " ", 4)
	if len(f) != 4 {
		return nil, fmt.Errorf("stat %s: unexpected output %q", path, out)
	}
	mode, err1 := strconv.ParseUint(f[0], 8, 32)
	uid, err2 := strconv.Atoi(f[1])
	gid, err3 := strconv.Atoi(f[2])
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("stat %s: unexpected output %q", path, out)
	}
	fo := &FileOwner{Mode: fs.FileMode(mode).Perm(), UID: uid, GID: gid}
	if f[3] == "directory" {
		fo.Mode |= fs.ModeDir
	}
	return fo, nil
}
