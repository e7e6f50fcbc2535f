package labcmd

import (
	"fmt"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
)

// ProbeImageBuildOptions are the options of `lab probe-image build`.
type ProbeImageBuildOptions struct {
	Kernel  string
	Modules string
	Output  string
	// Rehearsal also builds the rehearsal bootstrap's initrd, with the etcd
	// of OpenShiftVersion.
	Rehearsal        bool
	OpenShiftVersion string
}

// NewCmdProbeImage builds the `lab probe-image` group.
func NewCmdProbeImage(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "probe-image",
		Short:   "Build the probe lab's kernel + initramfs image",
		Example: `  bootlab lab probe-image build --rehearsal`,
	}
	cmd.AddCommand(NewCmdProbeImageBuild(f, nil))
	return cmd
}

// NewCmdProbeImageBuild builds `lab probe-image build`.
func NewCmdProbeImageBuild(f *cmdutil.Factory, runF func(*ProbeImageBuildOptions) error) *cobra.Command {
	opts := &ProbeImageBuildOptions{}
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build (or find in the cache) the probe image: kernel, initramfs with the bootlab-probe agent as /init, base disk",
		Example: `  bootlab lab probe-image build
  bootlab lab probe-image build --rehearsal
  bootlab lab probe-image build --kernel /boot/vmlinuz-6.1.0-28-cloud-amd64 --modules /lib/modules/6.1.0-28-cloud-amd64`,
		Long: `Build the probe image that probe-lab VMs boot with direct kernel boot.

The kernel and its modules come from --kernel/--modules, else the host's
/boot/vmlinuz-$(uname -r) and /lib/modules/$(uname -r), else Debian's
linux-image-cloud-amd64 (apt-get download into the cache). The agent is
built with go build when bootlab runs inside its source tree, else
bootlab-probe next to the bootlab executable or on PATH, or
$BOOTLAB_PROBE_AGENT. Images are cached by content hash under
the bootlab cache ($BOOTLAB_CACHE, else /var/cache/bootlab for root, else
$XDG_CACHE_HOME/bootlab; see ` + "`bootlab cache list`" + `) and rebuilt only
when an input changes. stdout: the image paths.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.OutputFlag(opts.Output, "text", "json"); err != nil {
				return err
			}
			if (opts.Kernel == "") != (opts.Modules == "") {
				return cmdutil.UsageErrorf("--kernel and --modules go together: give both or neither")
			}
			if runF != nil {
				return runF(opts)
			}
			f.Status.Start("Building the probe image")
			rehearsal := ""
			if opts.Rehearsal {
				rehearsal = opts.OpenShiftVersion
			}
			img, how, err := lab.EnsureProbeImage(cmd.Context(), f.Log, opts.Kernel, opts.Modules, rehearsal)
			if err != nil {
				return err
			}
			f.Status.End(true)
			if opts.Output == "json" {
				return cmdutil.WriteJSON(f.Streams.Out, "ProbeImage", struct {
					Agent string          `json:"agent"`
					Image *lab.ProbeImage `json:"image"`
				}{how, img})
			}
			state := "built"
			if !img.Built {
				state = "cached"
			}
			f.Say("info", "probe image %s (%s; kernel: %s; agent: %s)", img.Hash[:16], state, img.KernelSource, how)
			_, err = fmt.Fprintf(f.Streams.Out, "kernel: %s\ninitrd: %s\nbaseDisk: %s\ncmdline: %s\n", img.Kernel, img.Initrd, img.BaseDisk, img.Cmdline)
			if err == nil && img.RehearsalInitrd != "" {
				_, err = fmt.Fprintf(f.Streams.Out, "rehearsalInitrd: %s\n", img.RehearsalInitrd)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&opts.Kernel, "kernel", "", "kernel image (vmlinuz) to boot; needs --modules")
	cmd.Flags().BoolVar(&opts.Rehearsal, "rehearsal", false, "also build the rehearsal bootstrap's initrd (bash, coreutils, jq, curl from Debian packages: apt-get download; the release's etcd built from the Go module proxy)")
	cmd.Flags().StringVar(&opts.OpenShiftVersion, "openshift-version", spec.DefaultOpenShiftVersion, "with --rehearsal: the OpenShift release whose etcd the initrd carries")
	cmd.Flags().StringVar(&opts.Modules, "modules", "", "the kernel's module directory (/lib/modules/<release>); needs --kernel")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "text", "output format: text or json")
	return cmd
}
