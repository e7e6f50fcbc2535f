package cachecmd

import (
	"errors"
	"fmt"
	"time"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
)

// newCmdBuild is `cache build NAME`: the programs bootlab builds from the
// Go module proxy are built ahead of a classroom here, on a host with
// internet and Go, rather than by the first `lab up` that needs them.
func newCmdBuild(opts *Options, run func(string, *cobra.Command, func() error) error, f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "build kubernetes|etcd",
		Short: "Build the release's Kubernetes (hyperkube) or etcd from the Go module proxy into the cache, once",
		Long: `Build a program the labs need from the Go module proxy into the cache, as
the first lab that needs it would, so a classroom's cache can be filled and
exported beforehand. kubernetes is one static binary (hyperkube) that is
kube-apiserver, kube-controller-manager, kube-scheduler and kubectl by the
name it is called by, at the Kubernetes version the OpenShift release pins;
etcd is etcd and etcdctl. The first build runs go (minutes: the Kubernetes
one takes about ten on two cores); a cached one is found without running go.
stdout: the binary's path.`,
		Example: `  # fill a classroom cache for OpenShift 4.19, then carry it
  bootlab cache build kubernetes --openshift-version 4.19
  bootlab cache build etcd --openshift-version 4.19
  bootlab cache export classroom-cache.tar.gz`,
		Args: cmdutil.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Program = args[0]
			_, err := lab.LookupProgram(opts.Program, opts.OpenShiftVersion)
			var unknown *lab.UnknownProgramError
			var release *lab.UnknownReleaseError
			switch {
			case errors.As(err, &unknown):
				return cmdutil.UsageErrorf("cache build %q: bootlab builds kubernetes or etcd", opts.Program)
			case errors.As(err, &release):
				return cmdutil.UsageErrorf("--openshift-version: %v", release.Err)
			}
			return run("build", c, func() error { return runBuild(c, f, opts) })
		},
	}
	cmd.Flags().StringVar(&opts.OpenShiftVersion, "openshift-version", spec.DefaultOpenShiftVersion, "the OpenShift release whose pinned version is built")
	return cmd
}

func runBuild(c *cobra.Command, f *cmdutil.Factory, o *Options) error {
	p, err := lab.LookupProgram(o.Program, o.OpenShiftVersion)
	if err != nil {
		return err
	}
	f.Status.Start("Building %s %s for OpenShift %s into %s", p.Name, p.Version, p.OpenShift, o.dir())
	b, err := lab.BuildProgram(c.Context(), o.dir(), p, f.Log)
	if err != nil {
		f.Status.End(false)
		return err
	}
	how := "cached, go not run"
	if b.Built {
		how = "built in " + b.Took.Round(time.Second).String()
	}
	f.Status.EndDetail(true, fmt.Sprintf("%s, %s", human(b.Size), how))
	_, err = fmt.Fprintln(f.Streams.Out, b.Path)
	return err
}
