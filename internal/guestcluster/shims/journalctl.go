package shims

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bootlab/bootlab/internal/guestcluster/journal"
)

// journalctlSays is how the journalctl stand-in names itself on stderr.
const journalctlSays = "journalctl (bootlab rehearsal stand-in)"

// journalctlFlags are the flags played (systemd's man journalctl).
type journalctlFlags struct {
	units, idents []string
	// boot is -b's offset (0 this boot, -1 the one before); set says -b
	// was given.
	boot       int
	bootSet    bool
	follow     bool
	lines      int
	output     string
	linesGiven bool
}

// journalctlMain plays journalctl over the journal the rehearsal node's
// stand-ins keep (internal/guestcluster/journal): the units they play,
// -b, -u, -t, -n, -f, -o short|short-iso|cat|json, --no-pager.
func (t *Tools) journalctlMain(args []string, stdout, stderr io.Writer) int {
	f, err := parseJournalctlFlags(args)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", journalctlSays, err)
		return 1
	}
	fmt.Fprintf(stderr, "%s: the journal the rehearsal node's stand-ins keep in %s (bootkube.service: the stages' output; kubelet.service, crio.service: the kubelet stand-in; approve-csr.service; release-image.service)\n", journalctlSays, t.JournalDir)
	q := journal.Query{Units: f.units}
	if f.bootSet {
		if q.Boot, err = bootAt(t.JournalDir, f.boot); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", journalctlSays, err)
			return 1
		}
	}
	es, err := read(t.JournalDir, q, f.idents)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", journalctlSays, err)
		return 1
	}
	if f.linesGiven && len(es) > f.lines {
		es = es[len(es)-f.lines:]
	}
	print := printer(f.output)
	if len(es) == 0 && !f.follow && f.output != "json" && f.output != "cat" {
		fmt.Fprintln(stdout, "-- No entries --")
	}
	for _, e := range es {
		print(stdout, e)
	}
	if !f.follow {
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	seen := len(es)
	if all, err := read(t.JournalDir, q, f.idents); err == nil {
		seen = len(all)
	}
	for {
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(250 * time.Millisecond):
		}
		all, err := read(t.JournalDir, q, f.idents)
		if err != nil {
			continue
		}
		for _, e := range all[min(seen, len(all)):] {
			print(stdout, e)
		}
		seen = len(all)
	}
}

// read is the entries q selects, of the identifiers idents (all when none).
func read(dir string, q journal.Query, idents []string) ([]journal.Entry, error) {
	es, err := journal.Read(dir, q)
	if err != nil || len(idents) == 0 {
		return es, err
	}
	var out []journal.Entry
	for _, e := range es {
		for _, id := range idents {
			if e.Identifier == id {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// bootAt is the id of the boot at offset off (0 this one, -1 the one
// before), by the boots' first entries.
func bootAt(dir string, off int) (string, error) {
	if off == 0 {
		return journal.BootID(), nil
	}
	es, err := journal.Read(dir, journal.Query{})
	if err != nil {
		return "", err
	}
	first := map[string]int64{}
	for i, e := range es {
		if _, ok := first[e.BootID]; !ok {
			first[e.BootID] = int64(i)
		}
	}
	var boots []string
	for b := range first {
		boots = append(boots, b)
	}
	sort.Slice(boots, func(i, j int) bool { return first[boots[i]] < first[boots[j]] })
	cur := journal.BootID()
	idx := len(boots)
	for i, b := range boots {
		if b == cur {
			idx = i
		}
	}
	if i := idx + off; i >= 0 && i < len(boots) {
		return boots[i], nil
	}
	return "", fmt.Errorf("-b %d: the journal has %d boots", off, len(boots))
}

func printer(output string) func(io.Writer, journal.Entry) {
	switch output {
	case "short-iso":
		return journal.ShortISO
	case "cat":
		return journal.Cat
	case "json":
		return journal.JSON
	}
	return journal.Short
}

// parseJournalctlFlags reads journalctl's arguments, short flags combined
// or not (-xeu kubelet).
func parseJournalctlFlags(args []string) (journalctlFlags, error) {
	f := journalctlFlags{lines: 10}
	args = splitShortFlags(args)
	for i := 0; i < len(args); i++ {
		name, val, hasVal := strings.Cut(args[i], "=")
		next := func() (string, bool) {
			if hasVal {
				return val, true
			}
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return "", false
		}
		if err := f.set(name, args[i], hasVal, val, args[i+1:], next); err != nil {
			return f, err
		}
		if name == "-b" || name == "--boot" || name == "-n" || name == "--lines" {
			if !hasVal && i+1 < len(args) && isNumber(args[i+1]) {
				i++
			}
		}
	}
	if f.follow && !f.linesGiven {
		f.linesGiven = true // -f shows the last 10 first
	}
	return f, nil
}

// splitShortFlags splits combined short flags (-xeu kubelet: -x -e -u
// kubelet), a flag that takes a value ending the group.
func splitShortFlags(args []string) []string {
	var out []string
	for _, a := range args {
		if len(a) <= 2 || a[0] != '-' || a[1] == '-' || isNumber(a) {
			out = append(out, a)
			continue
		}
		for i, c := range a[1:] {
			if strings.ContainsRune("unot", c) && i < len(a)-2 {
				out = append(out, "-"+string(c), a[2+i:])
				break
			}
			out = append(out, "-"+string(c))
		}
	}
	return out
}

// set applies flag name (arg as given, its =value if any); rest are the
// arguments after it, next takes the value that follows.
func (f *journalctlFlags) set(name, arg string, hasVal bool, val string, rest []string, next func() (string, bool)) error {
	need := func() (string, error) {
		if v, ok := next(); ok {
			return v, nil
		}
		return "", fmt.Errorf("%s needs a value", name)
	}
	var err error
	var v string
	switch name {
	case "-u", "--unit":
		if v, err = need(); err == nil {
			f.units = append(f.units, journal.UnitName(v))
		}
	case "-t", "--identifier":
		if v, err = need(); err == nil {
			f.idents = append(f.idents, v)
		}
	case "-b", "--boot":
		f.bootSet = true
		if !hasVal && len(rest) > 0 && isNumber(rest[0]) {
			val = rest[0]
		}
		if val != "" {
			f.boot, err = strconv.Atoi(val)
		}
		if err != nil || f.boot > 0 {
			err = fmt.Errorf("-b %s: played are -b (this boot) and -b -N (N boots before)", val)
		}
	case "-f", "--follow":
		f.follow = true
	case "-n", "--lines":
		f.linesGiven = true
		if !hasVal && len(rest) > 0 && isNumber(rest[0]) {
			val = rest[0]
		}
		if val != "" {
			if f.lines, err = strconv.Atoi(val); err != nil || f.lines < 0 {
				err = fmt.Errorf("-n %q: a number of lines", val)
			}
		}
	case "-o", "--output":
		if f.output, err = need(); err == nil && !strings.Contains(" short short-iso cat json ", " "+f.output+" ") {
			err = fmt.Errorf("-o %s is not played: short, short-iso, cat or json", f.output)
		}
	case "-e", "--pager-end":
		f.linesGiven, f.lines = true, 1000
	case "--no-pager", "-x", "--catalog", "-a", "--all", "-l", "--full", "-q", "--quiet", "--no-hostname":
		// no pager, no catalog: what they change is already so
	default:
		err = fmt.Errorf("%s is not played (played: -b, -u UNIT, -t ID, -n N, -f, -o short|short-iso|cat|json, -e, -x, --no-pager)", arg)
	}
	return err
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}
