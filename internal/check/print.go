package check

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Options change the column titles of the table form.
type Options struct {
	// GroupTitle heads the group column (default GROUP). The column is
	// left out when no result has a group.
	GroupTitle string
	// NameTitle heads the name column (default CHECK).
	NameTitle string
	// Fix rewrites each fix before it is printed (the CLI points the
	// commands in it at the lab the user named). nil prints fixes as they are.
	Fix func(string) string
}

// Write prints rs for people: a header, one line per result with its mark
// (✓ ! ✗ - …), group, name and detail on one line, the note under a
// warning, and, when something failed, the failures again at the end with
// their fixes (one fix line for failures in a row that share it), so the
// last lines on the screen say what to do.
func Write(w io.Writer, rs []Result, o Options) error {
	if len(rs) == 0 {
		_, err := io.WriteString(w, "no checks\n")
		return err
	}
	if o.GroupTitle == "" {
		o.GroupTitle = "GROUP"
	}
	if o.NameTitle == "" {
		o.NameTitle = "CHECK"
	}
	fix := o.Fix
	if fix == nil {
		fix = func(s string) string { return s }
	}
	grouped := false
	for _, r := range rs {
		grouped = grouped || r.Group != ""
	}
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	line := func(mark, group, name, detail string) {
		if grouped {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", mark, group, name, detail)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", mark, name, detail)
		}
	}
	line("", o.GroupTitle, o.NameTitle, "DETAIL")
	for _, r := range rs {
		detail := oneLine(r.Detail)
		if r.Host != "" && r.Host != "localhost" {
			// A remote machine: say which one each fact is of.
			detail += "   [on " + r.Host + "]"
		}
		line(r.Mark(), r.Group, r.Name, detail)
		if r.State == StateWarning && r.Fix != "" {
			line("", "", "", "note: "+oneLine(fix(r.Fix)))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(table.String(), "\n"), "\n") {
		// An empty last cell leaves the padding of the one before it.
		b.WriteString(strings.TrimRight(l, " ") + "\n")
	}
	failed := Failed(rs)
	writePending(&b, rs, len(failed) == 0, fix)
	if len(failed) > 0 {
		fmt.Fprintf(&b, "\n%s:\n", Summarize(rs))
		for i, r := range failed {
			fmt.Fprintf(&b, "✗ %s: %s\n", r.Label(), oneLine(r.Detail))
			// Failures in a row with the same fix share one fix line.
			if r.Fix != "" && (i == len(failed)-1 || failed[i+1].Fix != r.Fix) {
				fmt.Fprintf(&b, "    fix: %s\n", oneLine(fix(r.Fix)))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writePending lists the pending results that say what they wait for (a
// Fix), one line per fix: how many wait, the first of them, and what to
// run. Results pending without a fix (stage status) need no list.
func writePending(b *strings.Builder, rs []Result, summary bool, fix func(string) string) {
	var order []string
	waiting := map[string][]string{}
	for _, r := range rs {
		if r.State != StatePending || r.Fix == "" {
			continue
		}
		if _, ok := waiting[r.Fix]; !ok {
			order = append(order, r.Fix)
		}
		waiting[r.Fix] = append(waiting[r.Fix], r.Label())
	}
	if len(order) == 0 {
		return
	}
	if summary {
		fmt.Fprintf(b, "\n%s:\n", Summarize(rs))
	} else {
		b.WriteString("\n")
	}
	for _, f := range order {
		labels := waiting[f]
		what := labels[0]
		if len(labels) > 1 {
			what = fmt.Sprintf("%d checks (%s, ...)", len(labels), labels[0])
		}
		fmt.Fprintf(b, "… %s pending\n    next: %s\n", what, oneLine(fix(f)))
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
