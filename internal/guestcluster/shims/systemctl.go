package shims

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/guestcluster/journal"
	"github.com/bootlab/bootlab/internal/guestcluster/units"
)

// systemctlSays starts the systemctl stand-in's own lines.
const systemctlSays = "systemctl " + standIn

// unitVerbs are the systemctl verbs played on the units the agent runs.
var unitVerbs = map[string]bool{"start": true, "stop": true, "restart": true, "status": true, "is-active": true}

// systemctlMain is the systemctl stand-in: the power verbs ask PID 1 by
// signal (power.go); start, stop, restart, status and is-active of a unit
// the agent runs (approve-csr.service, progress.service) ask the agent
// through its socket (units.SocketPath), as systemctl asks systemd over
// D-Bus. Any other unit or verb is refused, saying what is played.
func (t *Tools) systemctlMain(args []string, stdout, stderr io.Writer, signal Signaller) int {
	verb, unit, quiet, lines, ok := parseUnitVerb(args)
	if !ok {
		return powerMain("systemctl", args, stdout, stderr, signal)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if verb != "status" && verb != "is-active" && os.Geteuid() != 0 {
		fmt.Fprintf(stderr, "Failed to %s %s: Access denied\n%s: must be root: sudo systemctl %s %s\n", verb, unit, systemctlSays, verb, unit)
		return 1
	}
	ask := verb
	if verb == "is-active" {
		ask = "status"
	}
	r, err := units.Ask(ctx, t.unitsSocket(), units.Request{Verb: ask, Unit: unit})
	switch {
	case r.NoUnit || (err != nil && errors.Is(err, os.ErrNotExist)):
		fmt.Fprintf(stderr, "%s: only `systemctl reboot`, `systemctl poweroff` and `systemctl halt`, and start, stop, restart, status and is-active of the units the agent runs (%s) are played on this node (it has no systemd units)\n",
			systemctlSays, orNoUnits(r.Units))
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "Failed to %s %s: %v\n", verb, unit, err)
		return 1
	}
	st := r.State
	switch verb {
	case "is-active":
		if !quiet {
			fmt.Fprintln(stdout, st.Active)
		}
	case "status":
		t.printStatus(stdout, st, lines)
	default:
		fmt.Fprintf(stderr, "%s: the agent (PID 1), which runs %s, did the %s\n", systemctlSays, unit, verb)
		return 0
	}
	if st.Active != units.Active {
		return 3 // systemctl's "not active" (LSB: program is not running)
	}
	return 0
}

func orNoUnits(names []string) string {
	if len(names) == 0 {
		return "none answered: the agent's socket " + units.SocketPath + " is missing"
	}
	return strings.Join(names, ", ")
}

// unitsSocket is where the agent answers (a test sets Tools.UnitsSocket).
func (t *Tools) unitsSocket() string {
	if t.UnitsSocket != "" {
		return t.UnitsSocket
	}
	return units.SocketPath
}

// parseUnitVerb reads `systemctl [-q] [--no-pager] [-l] [-n N] VERB UNIT`;
// ok is false for anything else (the power verbs among it). A unit named
// without a suffix is a .service, as systemctl completes it.
func parseUnitVerb(args []string) (verb, unit string, quiet bool, lines int, ok bool) {
	lines = 10
	var rest []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "-q", "--quiet":
			quiet = true
		case "--no-pager", "-l", "--full", "--no-block":
		case "-n", "--lines":
			if i+1 < len(args) {
				i++
				if _, err := fmt.Sscanf(args[i], "%d", &lines); err != nil {
					return "", "", false, 0, false
				}
			}
		default:
			rest = append(rest, a)
		}
	}
	if len(rest) != 2 || !unitVerbs[rest[0]] {
		return "", "", false, 0, false
	}
	unit = rest[1]
	if !strings.Contains(unit, ".") {
		unit += ".service"
	}
	return rest[0], unit, quiet, lines, true
}

// printStatus prints st as systemctl status does, with the unit's last
// journal lines.
func (t *Tools) printStatus(w io.Writer, st units.State, lines int) {
	dot, sub := "●", "running"
	switch st.Active {
	case units.Inactive:
		dot, sub = "○", "dead"
	case units.Failed:
		dot, sub = "×", "Result: "+st.Result
	}
	fmt.Fprintf(w, "%s %s - %s\n", dot, st.Name, st.Description)
	fmt.Fprintf(w, "     Loaded: loaded (played by the agent, PID 1: %s; enabled)\n", systemctlSays)
	fmt.Fprintf(w, "     Active: %s (%s) since %s; %s ago\n", st.Active, sub, st.Since.UTC().Format("Mon 2006-01-02 15:04:05 MST"), time.Since(st.Since).Round(time.Second))
	if lines <= 0 {
		return
	}
	es, err := journal.Read(t.JournalDir, journal.Query{Units: []string{st.Name}, Boot: journal.BootID()})
	if err != nil || len(es) == 0 {
		return
	}
	if len(es) > lines {
		es = es[len(es)-lines:]
	}
	fmt.Fprintln(w)
	for _, e := range es {
		journal.Short(w, e)
	}
}
