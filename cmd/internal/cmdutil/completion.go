package cmdutil

import (
	"regexp"
	"strings"

	"github.com/spf13/cobra"
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
// real values for the enumerated flags and every -o.
func RegisterCompletions(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for name, vals := range flagValues {
			register(c, name, vals)
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
