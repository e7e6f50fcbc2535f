package labcmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	labspec "github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab/images"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/openshift"
)

// GatherOptions are the options of `lab gather`.
type GatherOptions struct {
	Spec cmdutil.SpecFlags
}

// NewCmdGather builds `lab gather`.
func NewCmdGather(f *cmdutil.Factory, runF func(*GatherOptions) error) *cobra.Command {
	opts := &GatherOptions{}
	cmd := &cobra.Command{
		Use:     "gather",
		Short:   "Collect the bootstrap's logs with openshift-install gather bootstrap",
		Example: `  bootlab lab gather -f lab.yaml`,
		Long: `Runs openshift-install gather bootstrap --dir <assets> --bootstrap <ip>
--master <ip>... --key <lab key>: over SSH as core it collects the bootstrap's
journals, containers, service records (/var/log/openshift/*.json) and rendered
assets, and the masters' logs, into <assets>/log-bundle-<id>.tar.gz, then names
the failing stage when it can. Prints the bundle's path on stdout.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runGather(cmd.Context(), f, opts)
		},
	}
	cmdutil.AddTargetFlags(cmd, &opts.Spec)
	return cmd
}

func runGather(ctx context.Context, f *cmdutil.Factory, opts *GatherOptions) error {
	spec, st, err := cmdutil.BuiltSpec(&opts.Spec)
	if err != nil {
		return err
	}
	if spec.Profile != labspec.ProfileOpenShift {
		return cmdutil.WithCode(cmdutil.ExitInvalid, fmt.Errorf("lab %s is a %s lab: gather needs a real bootstrap node (openshift profile)", spec.Name, spec.Profile))
	}
	if st.BootstrapRemoved {
		return fmt.Errorf("the bootstrap of lab %s was removed by `bootlab lab pivot`: there is nothing left to gather from it; use `oc adm must-gather` on the cluster", spec.Name)
	}
	boots := spec.NodesByRole(labspec.RoleBootstrap)
	if len(boots) == 0 {
		return fmt.Errorf("lab %s has no bootstrap node", spec.Name)
	}
	var masters []string
	for _, m := range spec.NodesByRole(labspec.RoleMaster) {
		masters = append(masters, m.IP)
	}
	if _, err := os.Stat(filepath.Join(labdir.Assets(spec), "metadata.json")); err != nil {
		return fmt.Errorf("no install assets in %s: `bootlab lab up` with a pull secret makes them; gather needs them", labdir.Assets(spec))
	}
	bin, err := openshift.FindInstaller(ctx, spec.OpenShift.Version, spec.OpenShift.InstallerPath, images.DefaultCacheDir(), nil)
	if err != nil {
		return err
	}
	f.Status.Start("openshift-install gather bootstrap (bootstrap %s, %d masters)", boots[0].IP, len(masters))
	bundle, err := openshift.GatherBootstrap(ctx, &openshift.Installer{Path: bin, Log: f.Log}, labdir.Assets(spec), boots[0].IP, masters, labdir.SSHKey(spec))
	if err != nil {
		return err
	}
	f.Status.End(true)
	f.Status.Infof("bootstrap logs: %s (unpack with tar xzf; bootstrap/services/*.json name the failing stage)", bundle)
	_, err = fmt.Fprintln(f.Streams.Out, bundle)
	return err
}
