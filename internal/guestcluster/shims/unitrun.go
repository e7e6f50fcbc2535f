package shims

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/bootlab/bootlab/internal/guestcluster/journal"
)

// UnitRunName is the program the stage scripts run themselves under on a
// rehearsal node (scripts/lib/bootkube.sh): no systemd keeps the output of
// the unit they play there, so it does.
const UnitRunName = "bootlab-journal"

// unitRunMain is `bootlab-journal --unit UNIT --identifier ID -- COMMAND
// ARGS...`: it runs COMMAND with its stdout and stderr copied, line by
// line, to its own and to UNIT's journal as ID[pid], as systemd does for a
// unit with StandardOutput=journal, and exits with COMMAND's status.
func (t *Tools) unitRunMain(args []string, stdout, stderr io.Writer) int {
	unit, ident, argv, err := parseUnitRun(args)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\nusage: %s --unit UNIT --identifier ID -- COMMAND [ARGS...]\n", UnitRunName, err, UnitRunName)
		return 2
	}
	// A unit's processes get systemd's UMask=, 0022 unless the unit says
	// otherwise (systemd.exec(5)); bootkube.service does not. Under an SSH
	// login the stage would keep the session's (077), and what it creates,
	// /var/log/openshift among them, would be root's alone.
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = os.Stdin
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	cmd.Stdout, cmd.Stderr = outW, errW
	old := syscall.Umask(0o022)
	err = cmd.Start()
	syscall.Umask(old)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", UnitRunName, err)
		return 127
	}
	j := journal.NewWriter(t.JournalDir, unit, ident, cmd.Process.Pid)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	copied := make(chan struct{}, 2)
	for _, c := range []struct {
		r   io.Reader
		w   io.Writer
		pri int
	}{{outR, stdout, journal.PriInfo}, {errR, stderr, journal.PriInfo}} {
		go func() {
			s := j.Stream(c.pri)
			_, _ = io.Copy(io.MultiWriter(lenient{c.w}, s), c.r)
			s.Flush()
			copied <- struct{}{}
		}()
	}
	werr := cmd.Wait()
	outW.Close()
	errW.Close()
	<-copied
	<-copied
	code := 0
	var exit *exec.ExitError
	if errors.As(werr, &exit) {
		code = exit.ExitCode()
		if code < 0 {
			code = 128 + int(exit.Sys().(syscall.WaitStatus).Signal())
		}
		// systemd's own line on the unit (its identifier is systemd).
		sd := journal.NewWriter(t.JournalDir, unit, "systemd", 1)
		sd.Print(journal.PriWarning, fmt.Sprintf("%s: Main process exited, code=exited, status=%d/FAILURE", unit, code))
	}
	return code
}

func parseUnitRun(args []string) (unit, ident string, argv []string, err error) {
	for i := 0; i < len(args); i++ {
		name, val, hasVal := strings.Cut(args[i], "=")
		if name == "--" {
			argv = args[i+1:]
			break
		}
		if !hasVal {
			if i+1 >= len(args) {
				return "", "", nil, fmt.Errorf("%s needs a value", name)
			}
			i++
			val = args[i]
		}
		switch name {
		case "--unit":
			unit = journal.UnitName(val)
		case "--identifier":
			ident = val
		default:
			return "", "", nil, fmt.Errorf("unknown flag %s", name)
		}
	}
	switch {
	case unit == "":
		err = errors.New("--unit is missing")
	case ident == "":
		err = errors.New("--identifier is missing")
	case len(argv) == 0:
		err = errors.New("no command after --")
	}
	return unit, ident, argv, err
}

// lenient is a writer whose errors are dropped: the command's output
// still reaches the journal when the caller went away (its SSH session
// cut), and the command is never blocked on a full pipe.
type lenient struct{ w io.Writer }

func (l lenient) Write(p []byte) (int, error) {
	_, _ = l.w.Write(p)
	return len(p), nil
}
