package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/coreos/ignition/v2/config/v3_2/types"

	"github.com/bootlab/bootlab/internal/atomicfile"
	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/wire"
)

// Ignition runs once, on an RHCOS node's first boot (coreos/ignition
// README.md: "Ignition only runs once"): a master fetches its config from
// the Machine Config Server then, and never again; a reboot finds /etc
// and /var as the first boot left them. A rehearsal master does the same:
// it keeps the merged config it applied on its node disk and boots from it
// again, so a reboot does not depend on an MCS (after the pivot a lab's
// only MCS may be the master that is rebooting).

// appliedConfigPath is the merged config a node with a node disk applied on
// its first boot (0600: it carries the node's keys).
const appliedConfigPath = "/var/lib/bootlab/applied-ignition.json"

// mountKeptDisk mounts the node disk before the config is read when it
// already holds the node's file system (a boot after the first), so the
// applied config is found there. A first boot, or a node without one,
// mounts nothing here.
func (a *Agent) mountKeptDisk(ctx context.Context) {
	if findDiskBySerial("/sys/block", wire.NodeDiskSerial) == "" {
		return
	}
	if _, ours, err := openNodeDisk(ctx, "/sys/block", "/dev"); err != nil || !ours {
		return
	}
	a.keepNodeState(ctx)
}

// appliedConfig is the config kept by an earlier boot, false when there is
// none (or no node disk).
func (a *Agent) appliedConfig() (types.Config, bool) {
	if a.disk == nil || a.disk.FirstBoot {
		return types.Config{}, false
	}
	cfg, err := readAppliedConfig(appliedConfigPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return types.Config{}, false
	case err != nil:
		a.log.Warn("the applied config on the node disk: fetching it again", "err", err)
		return types.Config{}, false
	}
	return cfg, true
}

// keepAppliedConfig writes the merged config fetched on this boot to the
// node disk, when the node has one.
func (a *Agent) keepAppliedConfig(cfg types.Config) {
	if a.disk == nil {
		return
	}
	if err := writeAppliedConfig(appliedConfigPath, cfg); err != nil {
		a.log.Warn("keep the applied config on the node disk: the next boot fetches it again", "err", err)
	}
}

// readAppliedConfig reads the config kept at path.
func readAppliedConfig(path string) (types.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return types.Config{}, err
	}
	cfg, err := ignition.Parse(data)
	if err != nil {
		return types.Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// writeAppliedConfig keeps cfg at path, 0600 in a 0700 directory.
func writeAppliedConfig(path string, cfg types.Config) error {
	data, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}
