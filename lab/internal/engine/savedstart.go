package engine

import (
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"

	"github.com/bootlab/bootlab/lab/cache"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/internal/plan"
	"github.com/bootlab/bootlab/lab/internal/savedstart"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// savedStartNode is the template's node name: not a DNS label, so never a
// node's (spec validation), and its domain is bootlab-<lab>-saved_start.
const savedStartNode = "saved_start"

// SavedStartEnv set to "off" makes lab up boot every probe node.
const SavedStartEnv = "BOOTLAB_SAVED_START"

// savedStarter is the Starter of this up, or nil when its nodes boot: a
// dry run, a hypervisor that cannot save memory here (another machine's,
// the test driver), a real cluster, a probe image bootlab did not build
// (its agent may not wait as a template), or BOOTLAB_SAVED_START=off.
func (r *labRun) savedStarter(ctx context.Context) *savedstart.Starter {
	if r.plan != nil || !r.caps.SavesMemory || r.s.Profile != spec.ProfileProbe || os.Getenv(SavedStartEnv) == "off" {
		return nil
	}
	dir := filepath.Dir(r.s.Image.Initrd)
	probeDir := filepath.Join(cache.Dir(), "probe") + string(filepath.Separator)
	if r.s.Image.Initrd == "" || !strings.HasPrefix(dir, probeDir) {
		return nil
	}
	version, err := r.hv.LibvirtVersion(ctx)
	if err != nil {
		return nil
	}
	md, _ := xml.Marshal(plan.Metadata{Name: r.s.Name, Node: savedStartNode, LabUUID: r.state.UUID})
	return &savedstart.Starter{
		HV: r.hv, Dir: dir, Libvirt: version, Log: r.log,
		Template: savedstart.Template{
			Name:     r.s.DomainPrefix() + savedStartNode,
			Metadata: string(md),
			Log:      labdir.ConsoleLog(r.s, spec.Node{Name: savedStartNode}),
			Owns:     func(o *hypervisor.Object) error { return r.ownDomain(o, savedStartNode) },
		},
	}
}

// startPaused starts planned domain d paused: from a saved image when ss
// can (how says so), else by booting it.
func (r *labRun) startPaused(ctx context.Context, ss *savedstart.Starter, d plan.DomainPlan) (how string, err error) {
	// A rehearsal bootstrap's initrd carries the tools (some 300 MB in its
	// memory): copying its image would cost more than its boot.
	if ss != nil && !(r.s.Rehearsal() && d.Node.Role == spec.RoleBootstrap) {
		err := ss.Start(ctx, d.Name)
		if err == nil {
			return " (saved image)", nil
		}
		if ctx.Err() != nil {
			return "", err
		}
		r.log.Warn("node boots: no saved start", "node", d.Node.Name, "why", err.Error())
	}
	return "", r.hv.StartDomainPaused(ctx, d.Name)
}
