// Package cachecmd holds the `bootlab cache ...` commands: what the download
// cache holds, and carrying it to a host without internet. The work is in
// package lab/cache.
package cachecmd

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab/cache"
)

// Options are shared by every `cache` command.
type Options struct {
	// Dir is the cache root (cache.Dir() when empty).
	Dir string
	// Home is the bootlab home whose labs prune keeps and export refuses to
	// include (lab.DefaultHome() when empty).
	Home      string
	Output    string
	File      string
	OlderThan time.Duration
	DryRun    bool
	// Force lets export replace a regular file at FILE.
	Force bool
	// Program and OpenShiftVersion are what `cache build` gets; Source is
	// "" (download when pinned and reachable, else build), "download" or
	// "build".
	Program          string
	OpenShiftVersion string
	Source           string
}

func (o *Options) dir() string {
	if o.Dir == "" {
		return cache.Dir()
	}
	return o.Dir
}

// checkDir refuses a cache root a lab directory could not be: every
// cache command lists, hashes, writes or removes everything under it.
func (o *Options) checkDir() error {
	if o.Dir != "" {
		return lab.CheckCacheRoot(o.Dir, "--cache-dir")
	}
	_, err := lab.CacheRoot()
	return err
}

func (o *Options) home() string {
	if o.Home == "" {
		return spec.DefaultHome()
	}
	return o.Home
}

// NewCmdCache builds the `cache` command group. runF, when set, replaces
// every subcommand's action (tests check flag parsing with it).
func NewCmdCache(f *cmdutil.Factory, runF func(cmd string, o *Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "List, export, import and prune the download cache (RHCOS, clients, probe images)",
		Example: `  bootlab cache list
  sudo bootlab cache export bootlab-cache.tar`,
		Long: `The cache keeps what labs download or build: RHCOS images (rhcos/), the
openshift-install and oc clients (clients/<version>/), probe images
(probe/<hash>/), the Debian kernel package the probe image is built from
(debian/download/), the probe agent (agent/), the rehearsal tools
(debian-tools/) and the release's Kubernetes and etcd, downloaded as their
projects publish them (official/<name>/<version>-<key>/) or built from the
Go module proxy (gobuild/<name>/<version>-<recipe>/); ` + "`bootlab cache build`" + `
puts them there ahead. It lives in $BOOTLAB_CACHE,
else /var/cache/bootlab for root, else $XDG_CACHE_HOME/bootlab.

Fill a cache on a host with internet, ` + "`bootlab cache export cache.tar.gz`" + `, copy the
file, and ` + "`bootlab cache import cache.tar.gz`" + ` on the classroom host: every file is
checked against the export's sha256 manifest before anything is moved in.`,
		Args: cobra.ArbitraryArgs,
		RunE: cmdutil.UnknownSubcommand,
	}
	cmd.PersistentFlags().StringVar(&opts.Dir, "cache-dir", "", "cache root (default $BOOTLAB_CACHE, else /var/cache/bootlab as root, else $XDG_CACHE_HOME/bootlab)")
	run := func(name string, c *cobra.Command, fn func() error) error {
		if runF != nil {
			return runF(name, opts)
		}
		if err := opts.checkDir(); err != nil {
			return err
		}
		return fn()
	}

	cmd.AddCommand(newCmdList(opts, run, f), newCmdExport(opts, run, f), newCmdImport(opts, run, f),
		newCmdPrune(opts, run, f), newCmdBuild(opts, run, f))
	return cmd
}

// runner runs a cache subcommand: its own run function, or the tests'
// runF with the parsed options.
type runner = func(name string, c *cobra.Command, fn func() error) error

// addHomeFlag is --home: the labs under it are kept (prune) and never
// exported (export).
func addHomeFlag(c *cobra.Command, opts *Options) {
	c.Flags().StringVar(&opts.Home, "home", "", "bootlab home whose labs are kept and never exported (default $BOOTLAB_HOME, else /var/lib/bootlab as root)")
}

// newCmdList builds `cache list`.
func newCmdList(opts *Options, run runner, f *cmdutil.Factory) *cobra.Command {
	list := &cobra.Command{
		Use:   "list",
		Short: "List every cached file: kind, version, size, sha256, last used",
		Example: `  bootlab cache list
  bootlab cache list -o json`,
		Args: cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cmdutil.OutputFlag(opts.Output, "table", "json"); err != nil {
				return err
			}
			return run("list", c, func() error { return runList(f, opts) })
		},
	}
	list.Flags().StringVarP(&opts.Output, "output", "o", "table", "output format: table or json")
	return list
}

// newCmdExport builds `cache export FILE`.
func newCmdExport(opts *Options, run runner, f *cmdutil.Factory) *cobra.Command {
	export := &cobra.Command{
		Use:   "export FILE",
		Short: "Write the cache to a tar (FILE.gz or .tgz: compressed) with a sha256 manifest first",
		Example: `  bootlab cache export bootlab-cache.tar
  bootlab cache export bootlab-cache.tar.gz --force`,
		Long: `Write the cache to FILE as a tar, its sha256 manifest first. The tar is
written beside FILE under a temporary name and renamed to FILE once
complete. An existing FILE is kept and the export refused unless --force;
a FIFO, device or other special file at FILE is never replaced.`,
		Args: cmdutil.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.File = args[0]
			return run("export", c, func() error { return runExport(f, opts) })
		},
	}
	addHomeFlag(export, opts)
	export.Flags().BoolVar(&opts.Force, "force", false, "replace FILE if it exists (a regular file only)")
	return export
}

// newCmdImport builds `cache import FILE`.
func newCmdImport(opts *Options, run runner, f *cmdutil.Factory) *cobra.Command {
	imp := &cobra.Command{
		Use:   "import FILE",
		Short: "Check every file of an export against its manifest, then move them into the cache",
		Example: `  bootlab cache import bootlab-cache.tar --dry-run
  bootlab cache import bootlab-cache.tar`,
		Args: cmdutil.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.File = args[0]
			return run("import", c, func() error { return runImport(f, opts) })
		},
	}
	imp.Flags().BoolVar(&opts.DryRun, "dry-run", false, "check the archive and list what would be imported, import nothing")
	return imp
}

// newCmdPrune builds `cache prune`.
func newCmdPrune(opts *Options, run runner, f *cmdutil.Factory) *cobra.Command {
	prune := &cobra.Command{
		Use:   "prune",
		Short: "Remove probe images no lab on this host boots",
		Example: `  bootlab cache prune --dry-run
  bootlab cache prune --older-than 720h`,
		Long: `Remove the probe images (probe/<hash>/) that no lab under the bootlab home
boots (the kernel and initrd of its last up), last used longer ago than
--older-than (default: any age). --dry-run lists them and removes nothing.`,
		Args: cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return run("prune", c, func() error { return runPrune(f, opts) })
		},
	}
	prune.Flags().DurationVar(&opts.OlderThan, "older-than", 0, "keep images used more recently than this (e.g. 720h)")
	prune.Flags().BoolVar(&opts.DryRun, "dry-run", false, "list what would be removed, remove nothing")
	addHomeFlag(prune, opts)
	return prune
}

// ListOutput is what `cache list -o json` prints.
type ListOutput struct {
	Dir       string        `json:"dir"`
	TotalSize int64         `json:"totalSize"`
	Entries   []cache.Entry `json:"entries"`
}

func runList(f *cmdutil.Factory, o *Options) error {
	es, err := cache.List(o.dir())
	if err != nil {
		return err
	}
	out := ListOutput{Dir: o.dir(), Entries: es}
	if out.Entries == nil {
		out.Entries = []cache.Entry{}
	}
	for _, e := range es {
		out.TotalSize += e.Size
	}
	if o.Output == "json" {
		return cmdutil.WriteJSON(f.Streams.Out, "CacheList", out)
	}
	if len(es) == 0 {
		f.Status.Infof("the cache %s is empty: `bootlab lab up` fills it, or `bootlab cache import FILE`", o.dir())
		return nil
	}
	return printList(f.Streams.Out, es)
}

func printList(w io.Writer, es []cache.Entry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tVERSION\tSIZE\tLAST USED\tSHA256\tPATH")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Kind, dash(e.Name), dash(e.Version), human(e.Size), e.LastUsed.Local().Format("2006-01-02 15:04"), e.SHA256[:12], e.Path)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runExport(f *cmdutil.Factory, o *Options) error {
	dirs, err := lab.LabDirs(o.home())
	if err != nil {
		return err
	}
	f.Status.Start("Exporting the cache %s to %s", o.dir(), o.File)
	m, err := cache.Export(o.dir(), o.File, cache.ExportOptions{LabDirs: dirs, Replace: o.Force})
	if err != nil {
		f.Status.End(false)
		return err
	}
	var total int64
	for _, mf := range m.Files {
		total += mf.Size
	}
	f.Status.EndDetail(true, fmt.Sprintf("%d files, %s", len(m.Files), human(total)))
	return nil
}

func runImport(f *cmdutil.Factory, o *Options) error {
	if o.DryRun {
		res, err := cache.PlanImport(o.dir(), o.File)
		if err != nil {
			return err
		}
		for _, p := range res.Imported {
			fmt.Fprintln(f.Streams.Out, p)
		}
		f.Status.Infof("would import %d files into %s, %d already there (nothing was changed)", len(res.Imported), o.dir(), len(res.Skipped))
		return nil
	}
	f.Status.Start("Importing %s into the cache %s", o.File, o.dir())
	res, err := cache.Import(o.dir(), o.File)
	if err != nil {
		f.Status.End(false)
		return err
	}
	f.Status.EndDetail(true, fmt.Sprintf("%d imported, %d already there", len(res.Imported), len(res.Skipped)))
	for _, p := range res.Imported {
		fmt.Fprintln(f.Streams.Out, p)
	}
	return nil
}

func runPrune(f *cmdutil.Factory, o *Options) error {
	refs, err := lab.LabImages(o.home())
	if err != nil {
		return err
	}
	pruned, err := cache.Prune(o.dir(), cache.PruneOptions{Referenced: refs, OlderThan: o.OlderThan, DryRun: o.DryRun})
	for _, p := range pruned {
		fmt.Fprintf(f.Streams.Out, "%s\t%s\t%s\n", p.Path, human(p.Size), p.LastUsed.Local().Format("2006-01-02 15:04"))
	}
	if err != nil {
		return err
	}
	var total int64
	for _, p := range pruned {
		total += p.Size
	}
	verb := "removed"
	if o.DryRun {
		verb = "would remove"
	}
	f.Status.Infof("%s %d probe image(s), %s; %d referenced by labs kept", verb, len(pruned), human(total), len(refs))
	return nil
}

func human(n int64) string { return cache.HumanSize(n) }
