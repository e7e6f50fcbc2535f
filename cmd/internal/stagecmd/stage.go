// Package stagecmd holds the `bootlab stage ...` commands.
package stagecmd

import (
	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
)

// NewCmdStage builds the `stage` command group.
func NewCmdStage(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stage",
		Short: "Replay the bootstrap node's bootkube.sh as numbered stages",
	}
	return cmd
}
