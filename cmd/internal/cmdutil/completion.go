package cmdutil

import (
	"context"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/lab"
	labspec "github.com/bootlab/bootlab/lab/spec"
)

// flagValues are the values of bootlab's enumerated flags, by flag name.
var flagValues = map[string][]string{
	"accel":        {"auto", "kvm", "tcg"},
	"profile":      {"probe", "openshift"},
	"network-mode": {"isolated", "nat"},
	"log-format":   {"text", "json"},
	"user":         {"core", "root"},
}

// formatsInUsage reads "output format: table or json" (the -o usage every
// command writes) into its values.
var formatsInUsage = regexp.MustCompile(`format: ([a-z]+(?:(?:, | or )[a-z]+)*)`)

// RegisterCompletions walks the command tree and lets shell completion offer
// real values for the enumerated flags and every -o, and the names of the
// labs on this host for --name (a class command's: the classes).
func RegisterCompletions(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for name, vals := range flagValues {
			register(c, name, vals)
		}
		// A lab command's --name completes lab names: AddTargetFlags
		// registers that with the flag.
		if fl := c.LocalFlags().Lookup("name"); fl != nil && c.HasParent() && c.Parent().Name() == "class" {
			_ = c.RegisterFlagCompletionFunc("name", completeClassNames)
		}
		if fl := c.LocalFlags().Lookup("output"); fl != nil {
			if m := formatsInUsage.FindStringSubmatch(fl.Usage); m != nil {
				register(c, "output", strings.FieldsFunc(m[1], func(r rune) bool { return r == ',' || r == ' ' }))
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func register(c *cobra.Command, flag string, vals []string) {
	if c.LocalFlags().Lookup(flag) == nil && c.PersistentFlags().Lookup(flag) == nil {
		return
	}
	var clean []string
	for _, v := range vals {
		if v != "" && v != "or" {
			clean = append(clean, v)
		}
	}
	_ = c.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(clean, cobra.ShellCompDirectiveNoFileComp))
}

// completeLabNames offers the labs under the bootlab home (lab.FindLabs),
// each with what it is.
func completeLabNames(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	labs, err := lab.FindLabs(labspec.DefaultHome())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, l := range labs {
		what := "not up"
		switch {
		case l.Err != nil:
			what = "its state cannot be read"
		case l.Built:
			what = string(l.Spec.Profile) + " lab"
		}
		if l.Class != "" {
			what += ", class " + l.Class
		}
		out = append(out, l.Name+"\t"+what)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeClassNames offers the classes the labs under the bootlab home
// belong to.
func completeClassNames(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	labs, err := lab.FindLabs(labspec.DefaultHome())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	count := map[string]int{}
	for _, l := range labs {
		if l.Class != "" {
			count[l.Class]++
		}
	}
	var out []string
	for c, n := range count {
		out = append(out, c+"\t"+strconv.Itoa(n)+" labs")
	}
	sort.Strings(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completionTimeout bounds what a completion asks libvirt (a remote
// hypervisor that does not answer must not hang the shell).
const completionTimeout = 5 * time.Second

// CompleteCheckpoints offers the checkpoints of the lab sf names as the
// one argument of lab checkpoint restore and delete.
func (f *Factory) CompleteCheckpoints(sf *SpecFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := CompletionContext(cmd)
		defer cancel()
		l, err := f.OpenTarget(ctx, sf)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer l.Close()
		return CheckpointNames(ctx, l), cobra.ShellCompDirectiveNoFileComp
	}
}

// CheckpointNames are lab l's checkpoints for completion, each with when
// it was taken (none when they cannot be listed).
func CheckpointNames(ctx context.Context, l *lab.Lab) []string {
	cps, err := l.Checkpoints(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, cp := range cps {
		out = append(out, cp.Name+"\t"+cp.Created.Local().Format(time.DateTime))
	}
	return out
}

// CompletionContext is the command's context, bounded by
// completionTimeout: what a completion that asks libvirt runs with.
func CompletionContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, completionTimeout)
}
