package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/internal/plan"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/labdir"
)

// bootlab removes only what it can prove it made for a lab. In the lab
// directory the proof is the lab's state (labdir.Owned); for the pool it is
// the pool's UUID in the state, the pool directory found new or empty when
// the pool was defined, and volume names only bootlab gives (ownVolume); on
// a remote hypervisor's machine it is a marker file (hostMarker) written
// into the lab's host directory when bootlab made it.

// hostMarker names the file that marks a remote lab host directory as the
// lab's: it holds the lab's name and UUID.
const hostMarker = ".bootlab-lab"

func hostMarkerContent(s *spec.Spec, uuid string) string { return s.Name + " " + uuid }

// requireOwned refuses to change files in a lab directory that holds no
// state of this lab (labdir.ErrNoState: the lab does not exist there).
func requireOwned(s *spec.Spec) error {
	if _, ok := labdir.Owned(s); !ok {
		return fmt.Errorf("%w in %s: lab %s was never built there, so nothing there is touched", labdir.ErrNoState, s.LabDir, s.Name)
	}
	return nil
}

// checkHostDirs refuses, before anything is made, a storage.poolDir (and
// on a remote hypervisor a libvirt.hostDir) that exists and holds files
// bootlab did not make for this lab. A hypervisor reached by libvirt alone
// cannot be asked; ensurePool still checks the pool when it defines it.
func checkHostDirs(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, st *labdir.State) error {
	h := hv.Host()
	if _, ok := h.(host.LibvirtOnly); ok || !hv.Capabilities().PoolsOnDisk {
		return nil
	}
	if st == nil || st.PoolUUID == "" {
		if err := checkHostDir(ctx, h, "storage.poolDir", s.Storage.PoolDir, poolLeftovers(s)); err != nil {
			return err
		}
	}
	if !h.Remote() {
		return nil
	}
	uuid := ""
	if st != nil {
		uuid = st.UUID
	}
	owned, err := hostMarked(ctx, h, s, uuid)
	if err != nil || owned {
		return err
	}
	return checkHostDir(ctx, h, "libvirt.hostDir", labdir.HostDir(s), nil)
}

// hostMarked reads the marker in the lab's host directory: true when it
// names this lab (uuid), an error when it names another, false when there
// is none.
func hostMarked(ctx context.Context, h host.Host, s *spec.Spec, uuid string) (bool, error) {
	dir := labdir.HostDir(s)
	b, err := h.ReadFile(ctx, dir+"/"+hostMarker)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read libvirt.hostDir %s on %s: %w", dir, h.Name(), err)
	}
	mark := strings.TrimSpace(string(b))
	if uuid != "" && mark == hostMarkerContent(s, uuid) {
		return true, nil
	}
	return false, &labdir.NotOursError{Field: "libvirt.hostDir", Dir: h.Name() + ":" + dir, Files: []string{hostMarker + " of lab " + labdir.Cut(mark, 80)}}
}

// listDir lists dir on h (nil when it does not exist).
func listDir(ctx context.Context, h host.Host, dir string) ([]string, error) {
	var out, errb bytes.Buffer
	code, err := h.Run(ctx, "ls -A -- "+sshc.Quote(dir), nil, &out, &errb)
	if err != nil {
		return nil, fmt.Errorf("list %s on %s: %w", dir, h.Name(), err)
	}
	if code != 0 {
		return nil, nil // absent (an unreadable one fails when it is written)
	}
	return strings.Fields(out.String()), nil
}

// checkHostDir refuses dir on h when it is (links followed, on this
// machine) a system directory, or holds anything but the names in allowed.
func checkHostDir(ctx context.Context, h host.Host, field, dir string, allowed map[string]bool) error {
	where := dir
	if h.Remote() {
		where = h.Name() + ":" + dir
	}
	if _, local := h.(host.Local); local {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			if why := spec.SystemDirProblem(real, true); why != "" {
				return &labdir.NotOursError{Field: field, Dir: where + " (" + real + ")", Files: []string{why}}
			}
		}
	}
	names, err := listDir(ctx, h, dir)
	if err != nil {
		return err
	}
	var foreign []string
	for _, name := range names {
		if !allowed[name] {
			foreign = append(foreign, name)
		}
	}
	if len(foreign) > 0 {
		sort.Strings(foreign)
		return &labdir.NotOursError{Field: field, Dir: where, Files: foreign}
	}
	return nil
}

// poolLeftovers are the files of this lab a pool directory may hold while
// the lab has no pool: the base image `lab down --keep-images` kept, as
// its record in the lab directory says.
func poolLeftovers(s *spec.Spec) map[string]bool {
	b, err := os.ReadFile(labdir.BaseImageMarker(s))
	if err == nil && strings.HasPrefix(string(b), s.Storage.PoolDir+" ") {
		return map[string]bool{s.BaseVolumeName(): true}
	}
	return nil
}

// ownVolume says whether a volume of the lab's pool is one bootlab makes:
// the base image, a node's overlay, a boot file volume.
func ownVolume(name string, specs ...*spec.Spec) bool {
	if strings.HasPrefix(name, plan.BootVolumePrefix) {
		return true
	}
	for _, s := range specs {
		if s == nil {
			continue
		}
		if name == s.BaseVolumeName() {
			return true
		}
		for _, n := range s.Nodes {
			if name == s.VolumeName(n) {
				return true
			}
		}
	}
	return false
}

// prepareHostDir makes the lab's directory on a remote hypervisor's
// machine, with its marker and the console log directory: a directory
// that exists without this lab's marker must be empty (build refused it
// already; this is the check at the moment of writing).
func (r *labRun) prepareHostDir(ctx context.Context, consoleDir string) (bool, error) {
	dir := labdir.HostDir(r.s)
	created := false
	if r.plan == nil {
		owned, err := hostMarked(ctx, r.host, r.s, r.state.UUID)
		if err != nil {
			return false, err
		}
		if !owned {
			if err := checkHostDir(ctx, r.host, "libvirt.hostDir", dir, nil); err != nil {
				return false, err
			}
			if _, err := host.Output(ctx, r.host, "mkdir -p -- "+sshc.Quote(dir)); err != nil {
				return false, fmt.Errorf("create the lab's directory (libvirt.hostDir): %w", err)
			}
			if err := r.host.WriteFile(ctx, dir+"/"+hostMarker, []byte(hostMarkerContent(r.s, r.state.UUID)+"\n"), 0o644); err != nil {
				return false, fmt.Errorf("mark the lab's directory %s on %s as this lab's: %w", dir, r.host.Name(), err)
			}
			created = true
		}
	}
	out, err := host.Output(ctx, r.host, "test -d "+sshc.Quote(consoleDir)+" && echo present || echo absent")
	if err != nil {
		return false, fmt.Errorf("console log directory on %s: %w", r.host.Name(), err)
	}
	if strings.TrimSpace(out) == "present" {
		return created, nil
	}
	if r.plan != nil {
		r.plan.note("create", "hostDir", r.host.Name()+":"+consoleDir, "")
		return false, nil
	}
	if _, err := host.Output(ctx, r.host, "mkdir -p -- "+sshc.Quote(consoleDir)); err != nil {
		return false, fmt.Errorf("create the console log directory (libvirt.hostDir): %w", err)
	}
	return true, nil
}
