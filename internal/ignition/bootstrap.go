package ignition

import (
	"fmt"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_2/types"
)

// BootkubeUnit is the unit that runs bootkube.sh on the bootstrap node.
const BootkubeUnit = "bootkube.service"

// SavedBootkubeUnitPath is where manual bootstrap mode keeps bootkube.service's
// unit file on the node. Ignition masks a unit by replacing
// /etc/systemd/system/<unit> with a symlink to /dev/null, which would lose the
// installer's unit; `bootlab stage handoff` unmasks, copies this file back to
// /etc/systemd/system/bootkube.service, reloads systemd and starts it.
const SavedBootkubeUnitPath = "/etc/bootlab/bootkube.service"

// ManualBootstrapMotd is appended to /etc/motd in manual bootstrap mode.
const ManualBootstrapMotd = `
This bootstrap node is in bootlab MANUAL BOOTSTRAP mode: bootkube.service is
masked, so nothing renders or starts the control plane until you do.
From the host, drive it one stage at a time with
    bootlab stage            (list, explain and run the bootkube stages)
and hand the rest back to bootkube.service with
    bootlab stage handoff
`

// ApplyManualBootstrap edits an installer bootstrap.ign (spec 3.2) for
// manual bootstrap mode: bootkube.service is masked (its unit contents saved
// at SavedBootkubeUnitPath) and /etc/motd gets ManualBootstrapMotd appended.
// Applying it twice gives the same config. The result is validated.
func ApplyManualBootstrap(data []byte) ([]byte, error) {
	cfg, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("bootstrap.ign: %w", err)
	}
	if err := maskBootkube(&cfg); err != nil {
		return nil, err
	}
	appendMotd(&cfg, ManualBootstrapMotd)
	return Marshal(cfg)
}

// IsManualBootstrap reports whether bootstrap.ign masks bootkube.service.
func IsManualBootstrap(data []byte) (bool, error) {
	cfg, err := Parse(data)
	if err != nil {
		return false, err
	}
	for _, u := range cfg.Systemd.Units {
		if u.Name == BootkubeUnit {
			return u.Mask != nil && *u.Mask, nil
		}
	}
	return false, nil
}

func maskBootkube(cfg *types.Config) error {
	for i := range cfg.Systemd.Units {
		u := &cfg.Systemd.Units[i]
		if u.Name != BootkubeUnit {
			continue
		}
		if u.Contents != nil && *u.Contents != "" {
			saveFile(cfg, SavedBootkubeUnitPath, 0o644, []byte(*u.Contents))
		}
		if !hasFile(cfg, SavedBootkubeUnitPath) {
			return fmt.Errorf("bootstrap.ign: %s has no unit contents to keep for `bootlab stage handoff`", BootkubeUnit)
		}
		mask := true
		u.Mask = &mask
		u.Contents = nil
		u.Enabled = nil
		return nil
	}
	return fmt.Errorf("bootstrap.ign has no %s unit: is it the bootstrap.ign that `openshift-install create ignition-configs` wrote?", BootkubeUnit)
}

func hasFile(cfg *types.Config, path string) bool {
	for _, f := range cfg.Storage.Files {
		if f.Path == path {
			return true
		}
	}
	return false
}

// saveFile sets the file at path to data, replacing an earlier entry.
func saveFile(cfg *types.Config, path string, mode int, data []byte) {
	src := DataURL(data)
	overwrite := true
	f := types.File{
		Node:          types.Node{Path: path, Overwrite: &overwrite},
		FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: &src}, Mode: &mode},
	}
	for i := range cfg.Storage.Files {
		if cfg.Storage.Files[i].Path == path {
			cfg.Storage.Files[i] = f
			return
		}
	}
	cfg.Storage.Files = append(cfg.Storage.Files, f)
}

// appendMotd adds text to /etc/motd through an append resource, as the
// installer does for its own motd, unless the same text is already there.
func appendMotd(cfg *types.Config, text string) {
	src := DataURL([]byte(text))
	for i := range cfg.Storage.Files {
		f := &cfg.Storage.Files[i]
		if f.Path != "/etc/motd" {
			continue
		}
		for _, a := range f.Append {
			if a.Source != nil && sameData(*a.Source, text) {
				return
			}
		}
		f.Append = append(f.Append, types.Resource{Source: &src})
		return
	}
	mode := 0o644
	cfg.Storage.Files = append(cfg.Storage.Files, types.File{
		Node:          types.Node{Path: "/etc/motd"},
		FileEmbedded1: types.FileEmbedded1{Append: []types.Resource{{Source: &src}}, Mode: &mode},
	})
}

func sameData(source, text string) bool {
	if !strings.HasPrefix(source, "data:") {
		return false
	}
	b, err := DecodeDataURL(source)
	return err == nil && string(b) == text
}
