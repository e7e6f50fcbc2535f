package labcmd

import (
	"errors"
	"fmt"
	"io"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/userfile"
)

// InitOptions are the options of `lab init`.
type InitOptions struct {
	File  string
	Name  string
	CIDR  string
	Force bool
}

// NewCmdInit builds `lab init`: write a small spec to start a lab from.
func NewCmdInit(f *cmdutil.Factory, runF func(*InitOptions) error) *cobra.Command {
	opts := &InitOptions{}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a small lab spec to start from: a rehearsal lab, safe to copy and rename",
		Long: `Write a small lab spec: the name, the profile, the machine network, the
topology and a rehearsal bootstrap (openshift.manualBootstrap), each with a
comment. Everything derived from the name (the bridge, the MACs, the lab and
pool directories) is left out, so a copy with another name and network is a
lab of its own; ` + "`bootlab lab config -f FILE`" + ` prints it with every default.
An existing file is kept unless --force (a FIFO or a device is never replaced);
-f - writes the spec to standard output.`,
		Example: `  bootlab lab init --name ux1 -f ux1.yaml
  bootlab lab init --name ux2 --cidr 192.168.130.0/24 -f ux2.yaml
  bootlab lab init --name ux3 -f - | sudo bootlab lab up -f -
  sudo bootlab lab up -f ux1.yaml`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runInit(f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.File, "file", "f", cmdutil.DefaultSpecFile, "spec file to write (- writes it to standard output)")
	fl.StringVar(&opts.Name, "name", "lab", "lab name: prefixes every libvirt object (bootlab-NAME-...)")
	fl.StringVar(&opts.CIDR, "cidr", "192.168.126.0/24", "machine network CIDR: one free /24 per lab on a host")
	fl.BoolVar(&opts.Force, "force", false, "overwrite an existing file")
	return cmd
}

// initSpec is the spec lab init writes, with a comment per field.
func initSpec(name, cidr string) string {
	return fmt.Sprintf(`# A bootlab lab spec (bootlab lab init). `+"`bootlab lab config -f FILE`"+` prints it
# with every default; what derives from the name (bridge, MACs, labDir,
# poolDir) is left out, so a renamed copy is a lab of its own.
name: %s
profile: probe            # probe: tiny VMs, no pull secret; openshift: a real cluster
accelerator: auto         # auto, kvm or tcg (auto falls back to TCG and says why)
network:
  cidr: %-18s# the machine network; the host bridge is .1 (DNS, DHCP, haproxy)
  mode: isolated          # nothing leaves the host; nat for real installs
topology:
  masters: 3              # etcd goes 1 -> 4 -> 3 as the bootstrap hands over
  workers: 1
openshift:
  manualBootstrap: true   # a rehearsal bootstrap: you run its stages (bootlab stage run NN)
`, name, cidr)
}

func runInit(f *cmdutil.Factory, opts *InitOptions) error {
	data := []byte(initSpec(opts.Name, opts.CIDR))
	s, err := spec.Parse(data, opts.File)
	if err != nil {
		return err
	}
	s.Defaults()
	if err := s.Validate(); err != nil {
		return err // a bad --name or --cidr, named as the field it fills
	}
	if opts.File == userfile.StdinPath {
		_, err := f.Streams.Out.Write(data)
		return err
	}
	err = userfile.WriteNew(opts.File, 0o644, opts.Force, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	var fe *userfile.Error
	if errors.As(err, &fe) {
		return fmt.Errorf("write lab spec %w", err)
	}
	if err != nil {
		return fmt.Errorf("write lab spec: %w", err)
	}
	f.Say("info", "wrote %s (lab %s): build it with `sudo bootlab lab up -f %s`", opts.File, opts.Name, opts.File)
	return nil
}
