package stagecmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/node"
	"github.com/bootlab/bootlab/internal/userfile"
	"github.com/bootlab/bootlab/stages"
)

// sourceDescBootlab is how output names the annotated scripts.
const sourceDescBootlab = "bootlab's annotated script"

func addBootkubeFlag(cmd *cobra.Command, file *string, usage string) {
	cmd.Flags().StringVar(file, "bootkube", "", usage)
}

func sourceFlag(val string) error {
	switch val {
	case "", stages.SourceNode, stages.SourceBootlab:
		return nil
	}
	return cmdutil.UsageErrorf("--source must be %s or %s, not %q", stages.SourceNode, stages.SourceBootlab, val)
}

// readScript reads a script the user names (bootkube.sh and its helpers
// beside it): a regular file, of a script's size.
func readScript(path string) ([]byte, error) {
	return userfile.Read(path, userfile.MaxTextBytes)
}

// localScript reads a bootkube.sh on this machine (--bootkube FILE) and the
// helpers beside it.
func localScript(file string) (*stages.NodeScript, error) {
	data, err := readScript(file)
	if err != nil {
		return nil, cmdutil.UsageErrorf("--bootkube %v (give a copy of a bootstrap node's /usr/local/bin/bootkube.sh)", err)
	}
	ns, err := stages.LocalScript(file, data, readScript, stages.Default())
	if err != nil {
		return nil, cmdutil.WithCode(cmdutil.ExitInvalid, fmt.Errorf("--bootkube: %w", err))
	}
	ns.Name = "bootkube.sh " + file
	return ns, nil
}

// nodeScript reads the node's bootkube.sh and the release it runs; nil
// when the node has none. A release that cannot be read is said, not fatal.
func nodeScript(ctx context.Context, f *cmdutil.Factory, node node.Node) (*stages.NodeScript, error) {
	ns, err := stages.ReadNodeScript(ctx, node, stages.Default())
	if err != nil || ns == nil {
		return ns, err
	}
	ns.Release, err = stages.NodeRelease(ctx, node)
	if err != nil {
		f.Status.Infof("warning: %v", err)
	}
	return ns, nil
}
