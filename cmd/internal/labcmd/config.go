package labcmd

import (
	"encoding/json"
	"fmt"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
)

// ConfigOptions are the options of `lab config`.
type ConfigOptions struct {
	Spec   cmdutil.SpecFlags
	Output string
}

// NewCmdConfig builds `lab config`: print the effective spec. runF replaces
// the behaviour in tests.
func NewCmdConfig(f *cmdutil.Factory, runF func(*ConfigOptions) error) *cobra.Command {
	opts := &ConfigOptions{}
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the effective lab spec (file + flags + defaults), validated",
		Example: `  bootlab lab config
  bootlab lab config -f lab.yaml -o json
  bootlab lab config --name ux1 --masters 1 --workers 0`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.OutputFlag(opts.Output, "yaml", "json"); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			// Without a named lab, config prints the defaults.
			opts.Spec.Optional = true
			spec, err := opts.Spec.Load()
			if err != nil {
				return err
			}
			printWarnings(f, spec)
			return printSpec(f, spec, opts.Output)
		},
	}
	cmdutil.AddSpecFlags(cmd, &opts.Spec)
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "yaml", "output format: yaml or json")
	return cmd
}

func printSpec(f *cmdutil.Factory, spec *spec.Spec, format string) error {
	var (
		data []byte
		err  error
	)
	if format == "json" {
		data, err = json.MarshalIndent(spec, "", "  ")
		data = append(data, '\n')
	} else {
		data, err = spec.Marshal()
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(f.Streams.Out, string(data))
	return err
}
