package cmdutil

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Confirm asks question (it ends "? [y/N] ") when a person can answer at a
// terminal; off one it refuses with refusal, a usage error that should name
// --yes. Anything but y or yes is no, and nothing is done.
func (f *Factory) Confirm(question, refusal string) error {
	if !f.Streams.InTTY {
		return UsageErrorf("%s", refusal)
	}
	fmt.Fprintf(f.Streams.ErrOut, "%s? [y/N] ", question)
	answer, _ := bufio.NewReader(f.Streams.In).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return WithCode(ExitError, fmt.Errorf("not confirmed: nothing deleted or changed"))
	}
	return nil
}

// Destructive marks sf as the target of a verb that destroys state (lab
// down, lab pivot, stage reset, checkpoint restore and delete): when the
// lab was found rather than named (no -f, no ./bootlab.yaml, no --name, no
// $BOOTLAB_LAB: the only lab on this host), OpenTarget asks before it
// returns, unless *yes or, where the verb has one, *dryRun.
func (sf *SpecFlags) Destructive(verb string, yes, dryRun *bool) {
	sf.verb, sf.yes, sf.dryRun = verb, yes, dryRun
}

// confirmFound asks before a destructive verb acts on a lab it found.
func (f *Factory) confirmFound(sf *SpecFlags, name string) error {
	if sf.verb == "" || sf.found == "" || sf.yes != nil && *sf.yes || sf.dryRun != nil && *sf.dryRun {
		return nil
	}
	return f.Confirm(
		fmt.Sprintf("%s would act on lab %s, %s (found, not named). Go on", sf.verb, name, sf.found),
		fmt.Sprintf("%s: no lab named (no -f, no ./%s, no --name, no $%s); the one found is lab %s, %s: name it (--name %s) or pass --yes when not at a terminal", sf.verb, DefaultSpecFile, EnvLab, name, sf.found, shellQuote(name)))
}

// AddYesFlag gives a destructive verb its --yes flag and marks its target
// (see Destructive).
func AddYesFlag(cmd *cobra.Command, sf *SpecFlags, verb string, yes, dryRun *bool) {
	cmd.Flags().BoolVarP(yes, "yes", "y", false, "do not ask when the lab was found rather than named (the only lab on this host)")
	sf.Destructive(verb, yes, dryRun)
}
