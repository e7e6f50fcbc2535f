package cachecmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
)

// newCmdBuild is `cache build NAME`: the release's Kubernetes and etcd are
// put into the cache ahead of a classroom here, on a host with internet,
// rather than by the first `lab up` that needs them.
func newCmdBuild(opts *Options, run func(string, *cobra.Command, func() error) error, f *cmdutil.Factory) *cobra.Command {
	var build, download bool
	cmd := &cobra.Command{
		Use:   "build kubernetes|etcd",
		Short: "Put the release's Kubernetes or etcd into the cache: downloaded and checked, or built from the Go module proxy",
		Long: `Put a program the rehearsal labs run into the cache, as the first lab that
needs it would, so a classroom's cache can be filled and exported
beforehand. kubernetes is kube-apiserver, kube-controller-manager,
kube-scheduler and kubectl at the Kubernetes version the OpenShift release
pins; etcd is etcd and etcdctl (and etcdutl when downloaded).

By default a cached copy is used; else the projects' official release
artefacts are downloaded (dl.k8s.io; etcd's release tarball of the version
OpenShift ships) when lab/release/checksums.txt pins their checksums and
the site answers within 3 s, each file checked against its checksum; else
the program is built from the Go module proxy (one static hyperkube for
Kubernetes, about 5-8 min on two cores; etcd about 1 min). It says which
and why. --download or --build asks for one way only.
$BOOTLAB_KUBERNETES_RELEASES_URL and $BOOTLAB_ETCD_RELEASES_URL point the
downloads at a mirror in the same layout.
stdout: the paths of the program's files, one a line.`,
		Example: `  # fill a classroom cache for OpenShift 4.19, then carry it
  bootlab cache build kubernetes --openshift-version 4.19
  bootlab cache build etcd --openshift-version 4.19
  bootlab cache export classroom-cache.tar.gz

  # build from the Go module proxy even where the download would work
  bootlab cache build kubernetes --build`,
		Args: cmdutil.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Program = args[0]
			switch {
			case build && download:
				return cmdutil.UsageErrorf("--build and --download: choose one (neither: download when pinned and reachable, else build)")
			case build:
				opts.Source = "build"
			case download:
				opts.Source = "download"
			}
			_, err := lab.LookupProgram(opts.Program, opts.OpenShiftVersion)
			var unknown *lab.UnknownProgramError
			var release *lab.UnknownReleaseError
			switch {
			case errors.As(err, &unknown):
				return cmdutil.UsageErrorf("cache build %q: bootlab gets kubernetes or etcd", opts.Program)
			case errors.As(err, &release):
				return cmdutil.UsageErrorf("--openshift-version: %v", release.Err)
			}
			return run("build", c, func() error { return runBuild(c, f, opts) })
		},
	}
	cmd.Flags().StringVar(&opts.OpenShiftVersion, "openshift-version", spec.DefaultOpenShiftVersion, "the OpenShift release whose pinned version is put in the cache")
	cmd.Flags().BoolVar(&build, "build", false, "build from the Go module proxy; never download")
	cmd.Flags().BoolVar(&download, "download", false, "download the official release artefacts (their checksums must be pinned); never build")
	return cmd
}

func runBuild(c *cobra.Command, f *cmdutil.Factory, o *Options) error {
	p, err := lab.LookupProgram(o.Program, o.OpenShiftVersion)
	if err != nil {
		return err
	}
	b, err := lab.GetProgram(c.Context(), p, lab.ProgramOptions{Dir: o.dir(), Source: o.Source, Log: f.Log,
		Status: f.Status, Progress: f.Streams.ErrOut, TTY: f.Streams.ErrTTY})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f.Streams.Out, strings.Join(b.Paths, "\n"))
	return err
}
