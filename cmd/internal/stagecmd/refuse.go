package stagecmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/node"
	"github.com/bootlab/bootlab/stages"
)

// refusal says how to get back from a run the stages refused (before
// anything ran): on a lab bootlab checkpoints, the stage's before-NN; on a
// real bootstrap node there is none.
func refusal(err error, opts *RunOptions, r *resolved) error {
	var re *stages.RefusedError
	if !errors.As(err, &re) {
		return err
	}
	msg := re.Error()
	if re.Redo && re.Stage != nil {
		if ok, _ := checkpointTarget(&opts.Target, r, opts.Checkpoints != nil); ok {
			msg += fmt.Sprintf("\n  to redo stage %s on this lab, go back to before it: bootlab stage reset %s (the before-%s checkpoint), then bootlab stage run %s",
				re.Stage.ID(), re.Stage.ID(), re.Stage.ID(), re.Stage.ID())
		} else {
			msg += "\n  a real bootstrap node has no way back: let bootkube.service finish from where the node is (bootlab stage handoff), or boot a new bootstrap node from bootstrap.ign to start over"
		}
	}
	return cmdutil.WithCode(cmdutil.ExitInvalid, errors.New(msg))
}

// nodeRelease takes the release to replay from the node (stage 02's
// VERSION, else `oc adm release info` of its release image), not from a
// default: a --openshift-version it contradicts is refused, a spec's that
// differs gives way with a warning; and it refuses a --release-image that
// is not the node's payload. A node whose release cannot be read keeps
// the flag's or spec's, with a warning.
func nodeRelease(ctx context.Context, f *cmdutil.Factory, n node.Node, t *Target, r *resolved, ns *stages.NodeScript) error {
	payload, err := stages.NodePayload(ctx, n)
	if err != nil {
		f.Status.Infof("warning: %v", err)
	}
	if err := stages.CheckReleaseImage(t.ReleaseImage, payload); err != nil {
		return cmdutil.WithCode(cmdutil.ExitInvalid, err)
	}
	var release string
	if ns != nil {
		// nodeScript read it, and said so when it could not.
		release = ns.Release
	} else if release, err = stages.NodeRelease(ctx, n); err != nil {
		f.Status.Infof("warning: %v; the stages are rendered for OpenShift %s", err, r.vars.Version)
		return nil
	}
	if release == "" {
		return nil
	}
	have, err := stages.ParseVersion(release)
	if err != nil {
		f.Status.Infof("warning: the node's release %q: %v; the stages are rendered for OpenShift %s", release, err, r.vars.Version)
		return nil
	}
	if t.OpenShiftVersion != "" {
		if err := stages.CheckVersion(r.vars.Version, have, release, "--openshift-version"); err != nil {
			return cmdutil.WithCode(cmdutil.ExitInvalid, err)
		}
	}
	if want := r.spec.OpenShift.Version; want != "" && r.vars.Version != have {
		f.Status.Infof("warning: the lab spec says OpenShift %s but the node runs %s: the stages follow the node", want, release)
	}
	r.vars.Version = have
	return nil
}
