package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/lab/loadbalancer"
)

// A checkpoint is one internal libvirt snapshot of every node of a lab (with
// memory for a running node, disks only for one that is off), all named
// bootlab-NAME, plus a copy of the lab's own files that change with the
// nodes (state.json, verify.json, the stage records) under
// <labDir>/checkpoints/NAME. Internal snapshots were chosen over external
// disk-only ones: they keep the qcow2 overlay the only file of a node (no
// chain to merge back), restore running nodes without a reboot, and are what
// libvirt reverts and deletes natively. docs/checkpoints.md has the numbers.

// snapshotPrefix marks the snapshots bootlab owns.
const snapshotPrefix = "bootlab-"

// checkpointFiles are the lab-directory entries a checkpoint carries and
// restore replaces.
var checkpointFiles = []string{"state.json", "verify.json", "stages"}

// consoleDir holds the nodes' serial console logs. A checkpoint carries them
// too (a probe node's reports are there: after a restore the node goes on
// reporting from the checkpoint's sequence number), but restore rewrites
// them in place: virtlogd keeps each open and appends to it.
const consoleDir = "console"

// checkpointMeta is <labDir>/checkpoints/NAME/checkpoint.json.
type checkpointMeta struct {
	Name    string    `json:"name"`
	Lab     string    `json:"lab"`
	LabUUID string    `json:"labUUID,omitempty"`
	Created time.Time `json:"created"`
	// Nodes maps each domain to the state it was snapshotted in.
	Nodes map[string]string `json:"nodes"`
}

// Checkpoint is one checkpoint of a lab as List reports it.
type Checkpoint struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	// Nodes maps every domain snapshotted to its state then ("running", "shutoff").
	Nodes map[string]string `json:"nodes"`
	// Missing names the domains whose snapshot is gone, and "files" when the
	// copy of the lab files is: such a checkpoint cannot be restored.
	Missing []string `json:"missing,omitempty"`
}

// RestoreOptions tune RestoreCheckpoint.
type RestoreOptions struct {
	Log *slog.Logger
	// SkipLoadBalancer leaves haproxy alone (unit tests, as UpOptions).
	SkipLoadBalancer bool
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ValidateCheckpointName refuses a name that is not a DNS label: it becomes
// a snapshot name and a directory name.
func ValidateCheckpointName(name string) error {
	if !dnsLabel.MatchString(name) {
		return fmt.Errorf("checkpoint name %q is not a DNS label: use 1 to 63 lowercase letters, digits and '-', starting and ending with a letter or digit (e.g. before-08)", name)
	}
	return nil
}

// CheckpointDir is where the checkpoint's copy of the lab files lives.
func CheckpointDir(s *Spec, name string) string {
	return filepath.Join(s.LabDir, "checkpoints", name)
}

func snapshotDescription(s *Spec, labUUID, name string) string {
	return fmt.Sprintf("bootlab checkpoint=%s lab=%s uuid=%s", name, s.Name, labUUID)
}

// ourCheckpoint returns the checkpoint name a snapshot of this lab's domain
// carries, or "" when bootlab did not take it for this lab.
func ourCheckpoint(s *Spec, labUUID string, sn Snapshot) string {
	if !strings.HasPrefix(sn.Name, snapshotPrefix) {
		return ""
	}
	f := map[string]string{}
	for _, kv := range strings.Fields(sn.Description) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			f[k] = v
		}
	}
	name := strings.TrimPrefix(sn.Name, snapshotPrefix)
	if !strings.HasPrefix(sn.Description, "bootlab ") || f["checkpoint"] != name || f["lab"] != s.Name || f["uuid"] != labUUID {
		return ""
	}
	return name
}

// SaveCheckpoint snapshots every node of the lab and copies the lab files
// into the checkpoint's directory. A name in use is refused; on failure the
// snapshots already taken are deleted again.
func SaveCheckpoint(ctx context.Context, hv Hypervisor, s *Spec, name string) (*Checkpoint, error) {
	if err := ValidateCheckpointName(name); err != nil {
		return nil, err
	}
	r, unlock, err := lockedLabRun(hv, s, nil, false)
	defer unlock()
	if err != nil {
		return nil, err
	}
	doms, err := r.ourDomains(ctx)
	if err != nil {
		return nil, err
	}
	if len(doms) == 0 {
		return nil, fmt.Errorf("lab %s has no VMs to checkpoint: run `bootlab lab up` first", s.Name)
	}
	dir := CheckpointDir(s, name)
	if _, err := os.Stat(dir); err == nil {
		return nil, fmt.Errorf("checkpoint %s of lab %s exists: restore it, or delete it first (bootlab lab checkpoint delete %s)", name, s.Name, name)
	}
	for _, d := range doms {
		snaps, err := hv.Snapshots(ctx, d.Name)
		if err != nil {
			return nil, err
		}
		for _, sn := range snaps {
			if sn.Name == snapshotPrefix+name {
				return nil, fmt.Errorf("domain %s already has a snapshot %s (left by an interrupted save?): delete it with `bootlab lab checkpoint delete %s`", d.Name, sn.Name, name)
			}
		}
	}

	tmp := dir + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("create checkpoint directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, f := range checkpointFiles {
		if err := copyTree(filepath.Join(s.LabDir, f), filepath.Join(tmp, f)); err != nil {
			return nil, fmt.Errorf("checkpoint %s: copy %s: %w", name, f, err)
		}
	}
	if err := r.saveConsoleLogs(ctx, filepath.Join(tmp, consoleDir)); err != nil {
		return nil, fmt.Errorf("checkpoint %s: copy console logs: %w", name, err)
	}

	sx, err := (&libvirtxml.DomainSnapshot{Name: snapshotPrefix + name, Description: snapshotDescription(s, r.state.UUID, name)}).Marshal()
	if err != nil {
		return nil, err
	}
	meta := checkpointMeta{Name: name, Lab: s.Name, LabUUID: r.state.UUID, Created: time.Now().UTC(), Nodes: map[string]string{}}
	for _, d := range doms {
		meta.Nodes[d.Name] = "shutoff"
		if d.Active {
			meta.Nodes[d.Name] = "running"
		}
	}
	// All nodes at once: each pauses while its memory is written, so the
	// nodes' clocks and conversations stop at nearly the same moment.
	var taken []string
	var mu sync.Mutex
	_, err = parallel(ctx, doms, parallelism, func(ctx context.Context, d Object) (bool, error) {
		if err := hv.CreateSnapshot(ctx, d.Name, sx); err != nil {
			return false, err
		}
		mu.Lock()
		taken = append(taken, d.Name)
		mu.Unlock()
		return true, nil
	})
	if err != nil {
		for _, dn := range taken {
			// Without ctx: an interrupted save still cleans up what it made.
			if derr := hv.DeleteSnapshot(context.WithoutCancel(ctx), dn, snapshotPrefix+name); derr != nil {
				r.log.Warn("could not delete a snapshot of the failed checkpoint", "domain", dn, "err", derr)
			}
		}
		return nil, fmt.Errorf("checkpoint %s: %w", name, err)
	}
	data, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "checkpoint.json"), data, 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", name, err)
	}
	return &Checkpoint{Name: name, Created: meta.Created, Nodes: meta.Nodes}, nil
}

// RestoreCheckpoint reverts every node to the checkpoint (disks, memory, run
// state), puts the lab files back as they were, and makes the load balancer
// match the restored state. What the checkpoint does not cover stays as it
// is now: the lab's identity, the network and pool, the host DNS set-up.
func RestoreCheckpoint(ctx context.Context, hv Hypervisor, s *Spec, name string, opts RestoreOptions) (*Checkpoint, error) {
	if err := ValidateCheckpointName(name); err != nil {
		return nil, err
	}
	r, unlock, err := lockedLabRun(hv, s, opts.Log, false)
	defer unlock()
	if err != nil {
		return nil, err
	}
	cps, err := r.checkpoints(ctx)
	if err != nil {
		return nil, err
	}
	var cp *Checkpoint
	for i := range cps {
		if cps[i].Name == name {
			cp = &cps[i]
		}
	}
	if cp == nil {
		return nil, fmt.Errorf("lab %s has no checkpoint %s: `bootlab lab checkpoint list` shows them", s.Name, name)
	}
	if len(cp.Missing) > 0 {
		return nil, fmt.Errorf("checkpoint %s of lab %s is incomplete (missing: %s) and cannot be restored: delete it (bootlab lab checkpoint delete %s)",
			name, s.Name, strings.Join(cp.Missing, ", "), name)
	}
	doms := make([]string, 0, len(cp.Nodes))
	for d := range cp.Nodes {
		doms = append(doms, d)
	}
	sort.Strings(doms)
	restored := &RestoreRecord{Checkpoint: name, Started: time.Now().UTC()}
	if _, err := parallel(ctx, doms, parallelism, func(ctx context.Context, d string) (bool, error) {
		return true, hv.RevertSnapshot(ctx, d, snapshotPrefix+name)
	}); err != nil {
		return nil, fmt.Errorf("restore checkpoint %s: %w", name, err)
	}
	restored.Finished = time.Now().UTC()

	dir := CheckpointDir(s, name)
	for _, f := range checkpointFiles {
		dst := filepath.Join(s.LabDir, f)
		if err := os.RemoveAll(dst); err != nil {
			return nil, fmt.Errorf("restore checkpoint %s: %w", name, err)
		}
		if err := copyTree(filepath.Join(dir, f), dst); err != nil {
			return nil, fmt.Errorf("restore checkpoint %s: copy %s back: %w", name, f, err)
		}
	}
	// After the revert: lines the broken run wrote later must not follow
	// the checkpoint's (a resumed node's next report continues from it).
	if err := r.restoreConsoleLogs(ctx, filepath.Join(dir, consoleDir)); err != nil {
		return nil, fmt.Errorf("restore checkpoint %s: console logs: %w", name, err)
	}
	// The checkpoint's state, but the identity and the objects that exist
	// now (the checkpoint did not roll them back) as they are.
	now := r.state
	st, err := LoadState(s.LabDir)
	if err != nil {
		return nil, fmt.Errorf("restore checkpoint %s: %w", name, err)
	}
	st.Name, st.UUID = now.Name, now.UUID
	st.NetworkUUID, st.PoolUUID, st.HostDNS = now.NetworkUUID, now.PoolUUID, now.HostDNS
	st.Restored = restored
	if err := st.Save(s.LabDir); err != nil {
		return nil, err
	}
	if !isTestURI(s.Libvirt.URI) && !opts.SkipLoadBalancer {
		spec := s
		if st.Spec != nil {
			spec = st.Spec
		}
		if _, err := loadbalancer.Ensure(ctx, LoadBalancerOn(r.host, spec, st.BootstrapRemoved), r.log); err != nil {
			return nil, fmt.Errorf("restore checkpoint %s: load balancer: %w", name, err)
		}
	}
	return cp, nil
}

// ListCheckpoints lists the lab's checkpoints, oldest first: every name
// found in the lab's snapshots or checkpoint directories, with what is missing.
func ListCheckpoints(ctx context.Context, hv Hypervisor, s *Spec) ([]Checkpoint, error) {
	r, err := newLabRun(hv, s, nil)
	if err != nil {
		return nil, err
	}
	return r.checkpoints(ctx)
}

func (r *labRun) checkpoints(ctx context.Context) ([]Checkpoint, error) {
	doms, err := r.ourDomains(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]*Checkpoint{}
	get := func(name string) *Checkpoint {
		if byName[name] == nil {
			byName[name] = &Checkpoint{Name: name, Nodes: map[string]string{}}
		}
		return byName[name]
	}
	has := map[string]map[string]bool{} // checkpoint -> domain
	for _, d := range doms {
		snaps, err := r.hv.Snapshots(ctx, d.Name)
		if err != nil {
			return nil, err
		}
		for _, sn := range snaps {
			name := ourCheckpoint(r.s, r.state.UUID, sn)
			if name == "" {
				continue
			}
			cp := get(name)
			cp.Nodes[d.Name] = sn.State
			if cp.Created.IsZero() || sn.Created.Before(cp.Created) {
				cp.Created = sn.Created
			}
			if has[name] == nil {
				has[name] = map[string]bool{}
			}
			has[name][d.Name] = true
		}
	}
	entries, err := os.ReadDir(filepath.Join(r.s.LabDir, "checkpoints"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	withFiles := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".partial") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(r.s.LabDir, "checkpoints", e.Name(), "checkpoint.json"))
		if err != nil {
			continue
		}
		var m checkpointMeta
		if err := json.Unmarshal(data, &m); err != nil || m.Name != e.Name() {
			r.log.Warn("ignoring a checkpoint directory bootlab cannot read", "dir", e.Name(), "err", err)
			continue
		}
		withFiles[m.Name] = true
		cp := get(m.Name)
		cp.Created = m.Created
		for d, state := range m.Nodes {
			cp.Nodes[d] = state
		}
	}
	out := make([]Checkpoint, 0, len(byName))
	for name, cp := range byName {
		for d := range cp.Nodes {
			if !has[name][d] {
				cp.Missing = append(cp.Missing, d)
			}
		}
		sort.Strings(cp.Missing)
		if !withFiles[name] {
			cp.Missing = append(cp.Missing, "files")
		}
		out = append(out, *cp)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// DeleteCheckpoint deletes the checkpoint's snapshot on every node and its
// directory. It finishes what an interrupted save or delete left.
func DeleteCheckpoint(ctx context.Context, hv Hypervisor, s *Spec, name string) error {
	if err := ValidateCheckpointName(name); err != nil {
		return err
	}
	r, unlock, err := lockedLabRun(hv, s, nil, false)
	defer unlock()
	if err != nil {
		return err
	}
	found, err := r.deleteCheckpointSnapshots(ctx, func(n string) bool { return n == name })
	if err != nil {
		return err
	}
	dir := CheckpointDir(s, name)
	for _, d := range []string{dir, dir + ".partial"} {
		if _, err := os.Stat(d); err == nil {
			found++
			if err := os.RemoveAll(d); err != nil {
				return fmt.Errorf("delete checkpoint %s: %w", name, err)
			}
		}
	}
	if found == 0 {
		return fmt.Errorf("lab %s has no checkpoint %s: `bootlab lab checkpoint list` shows them", s.Name, name)
	}
	return nil
}

// deleteCheckpointSnapshots deletes this lab's checkpoint snapshots whose
// checkpoint name match accepts, and says how many it deleted.
func (r *labRun) deleteCheckpointSnapshots(ctx context.Context, match func(string) bool) (int, error) {
	doms, err := r.ourDomains(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range doms {
		snaps, err := r.hv.Snapshots(ctx, d.Name)
		if err != nil {
			return n, err
		}
		for _, sn := range snaps {
			if name := ourCheckpoint(r.s, r.state.UUID, sn); name != "" && match(name) {
				if err := r.hv.DeleteSnapshot(ctx, d.Name, sn.Name); err != nil && !errors.Is(err, ErrNotFound) {
					return n, err
				}
				n++
			}
		}
	}
	return n, nil
}

// saveConsoleLogs copies the nodes' console logs into dir: from the lab
// directory, or read on a remote hypervisor's machine.
func (r *labRun) saveConsoleLogs(ctx context.Context, dir string) error {
	if !r.host.Remote() {
		return copyTree(filepath.Join(r.s.LabDir, consoleDir), dir)
	}
	for _, n := range r.s.Nodes {
		data, err := r.host.ReadFile(ctx, r.s.ConsoleLogPath(n))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, n.Name+".log"), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// restoreConsoleLogs puts the checkpoint's console logs (in from) back
// where virtlogd writes them, each rewritten in place (same inode:
// virtlogd's open descriptor appends after it).
func (r *labRun) restoreConsoleLogs(ctx context.Context, from string) error {
	if !r.host.Remote() {
		return restoreConsoleFiles(from, filepath.Join(r.s.LabDir, consoleDir))
	}
	entries, err := os.ReadDir(from)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	to := filepath.Dir(r.s.ConsoleLogPath(Node{Name: "x"}))
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return err
		}
		// cat > truncates and rewrites the same file, as below.
		var errb strings.Builder
		code, err := r.host.Run(ctx, "cat > "+sshc.Quote(filepath.Join(to, e.Name())), bytes.NewReader(data), nil, &errb)
		if err == nil && code != 0 {
			err = fmt.Errorf("exit status %d: %s", code, strings.TrimSpace(errb.String()))
		}
		if err != nil {
			return fmt.Errorf("rewrite %s on %s: %w", filepath.Join(to, e.Name()), r.host.Name(), err)
		}
	}
	return nil
}

// restoreConsoleFiles rewrites each console log in from into to, in place.
func restoreConsoleFiles(from, to string) error {
	entries, err := os.ReadDir(from)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(to, e.Name()), os.O_WRONLY|os.O_TRUNC|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies a file or a directory tree, keeping modes; a missing
// source is nothing to copy.
func copyTree(src, dst string) error {
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		case d.Type().IsRegular():
			return copyFile(p, target, info.Mode().Perm())
		}
		return nil // sockets, fifos: not lab state
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
