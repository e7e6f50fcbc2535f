package classcmd

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/stages"
)

// StatusOptions are the options of `class status`.
type StatusOptions struct {
	Class  ClassFlags
	Output string
}

// ClassStatus is `class status -o json`.
type ClassStatus struct {
	Class string      `json:"class"`
	Labs  []LabStatus `json:"labs"`
}

// LabStatus is one learner's line of `class status`.
type LabStatus struct {
	Learner string `json:"learner"`
	Lab     string `json:"lab"`
	// Host is the host the class placed the lab on ("" for a class
	// without hosts).
	Host       string `json:"host,omitempty"`
	CIDR       string `json:"cidr"`
	NodesUp    int    `json:"nodesUp"`
	NodesTotal int    `json:"nodesTotal"`
	// Verify is the last `lab verify` (or `class verify`) result, if any.
	Verify *lab.VerifyRecord `json:"verify,omitempty"`
	// Stage is the highest stage done on a rehearsal or manual-bootstrap
	// lab ("07 etcd-bootstrap"), "" when none ran.
	Stage string `json:"stage,omitempty"`
	// Checkpoint is the last checkpoint restored, if any.
	Restored string `json:"restored,omitempty"`
	// Faults are the faults `class break` or `lab break` set on the lab:
	// class status is the trainer's view (the learner's never names them).
	Faults []FaultStatus `json:"faults,omitempty"`
	// Unreachable is set when the lab's hypervisor did not answer: its
	// nodes are not known (Error says why).
	Unreachable bool   `json:"unreachable,omitempty"`
	Error       string `json:"error,omitempty"`
}

// FaultStatus is a fault set on a learner's lab: since when, and what the
// learner's own live diagnoses (lab diagnose) showed since.
type FaultStatus struct {
	Name     string    `json:"name"`
	BrokenAt time.Time `json:"brokenAt"`
	// DiagnosedAt is the first diagnosis since BrokenAt that stopped at
	// the fault's check; FixedAt the last one since that found no check
	// failed with bootkube complete (nil: not yet).
	DiagnosedAt *time.Time `json:"diagnosedAt,omitempty"`
	FixedAt     *time.Time `json:"fixedAt,omitempty"`
	// Minutes is how long the learner took: from BrokenAt to FixedAt, or
	// to when class status ran.
	Minutes int `json:"minutes"`
}

// faultProgress is f's status from the lab's diagnoses (oldest first):
// diagnosed by the first that stopped at check, fixed by the last that
// found nothing failed with bootkube complete, both since f was set.
func faultProgress(f FaultStatus, check string, ds []lab.Diagnosis, now time.Time) FaultStatus {
	for _, d := range ds {
		if d.Time.Before(f.BrokenAt) {
			continue
		}
		if f.DiagnosedAt == nil && check != "" && d.FailedAt == check {
			at := d.Time
			f.DiagnosedAt = &at
		}
		if d.FailedAt == "" && d.Complete {
			at := d.Time
			f.FixedAt = &at
		}
	}
	end := now
	if f.FixedAt != nil {
		end = *f.FixedAt
	}
	f.Minutes = int(end.Sub(f.BrokenAt).Minutes())
	return f
}

// NewCmdStatus builds `class status`.
func NewCmdStatus(f *cmdutil.Factory, runF func(*StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "One line per learner: nodes up, last verify result, stage reached, faults set",
		Example: `  bootlab class status -f class.yaml
  bootlab class status --name ux -o json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.OutputFlag(opts.Output, "table", "json"); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runStatus(cmd.Context(), f, opts)
		},
	}
	addClassFlags(cmd, &opts.Class, false)
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "table", "output format: table or json")
	return cmd
}

func runStatus(ctx context.Context, f *cmdutil.Factory, opts *StatusOptions) error {
	name, ms, err := classMembers(&opts.Class, true)
	if err != nil {
		return err
	}
	doc := ClassStatus{Class: name, Labs: make([]LabStatus, len(ms))}
	// One connection per daemon, shared by the labs on it; the hosts are
	// asked side by side, and one that does not answer is asked once.
	connect, closeAll := lab.Pooled(f.Connector())
	defer closeAll()
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			doc.Labs[i] = labStatus(ctx, f, connect, m)
		}()
	}
	wg.Wait()
	if opts.Output == "json" {
		return cmdutil.WriteJSON(f.Streams.Out, "ClassStatus", doc)
	}
	return printStatus(f, doc)
}

// labStatus is one learner's line: what the lab directory records (last
// verify, stages, restore), and its nodes as its hypervisor has them.
func labStatus(ctx context.Context, f *cmdutil.Factory, connect lab.Connector, m member) LabStatus {
	ls := LabStatus{Learner: m.Learner, Lab: m.Spec.Name, Host: m.Host, CIDR: m.Spec.Network.CIDR, NodesTotal: len(m.Spec.Nodes)}
	if !m.Built {
		ls.CIDR, ls.NodesTotal = "-", 0
	}
	l, err := lab.Open(ctx, m.Spec, lab.Options{Connect: connect, Log: f.Log})
	if err != nil {
		ls.Error = err.Error()
		return ls
	}
	defer l.Close()
	ls.Restored = l.Restored()
	ls.Verify, _ = l.LastVerify()
	ls.Stage = stageReached(l.StageDir(), l.UUID())
	if active, err := l.ActiveFaults(); err == nil && len(active) > 0 {
		checks := map[string]string{}
		for _, f := range lab.Faults() {
			checks[f.Name] = f.Check
		}
		ds, err := l.Diagnoses()
		if err != nil {
			ls.Error = err.Error()
		}
		for _, a := range active {
			ls.Faults = append(ls.Faults, faultProgress(FaultStatus{Name: a.Name, BrokenAt: a.At}, checks[a.Name], ds, time.Now()))
		}
	} else if err != nil {
		ls.Error = err.Error()
	}
	if _, err := connect(ctx, m.Spec.Libvirt.URI, f.Log); err != nil {
		ls.Unreachable, ls.Error = true, "unreachable: "+err.Error()
		return ls
	}
	st, err := l.Status(ctx)
	if err != nil {
		ls.Error = err.Error()
		return ls
	}
	for _, n := range st.Nodes {
		if n.State == "running" {
			ls.NodesUp++
		}
	}
	return ls
}

// printStatus prints the class's table: one line per learner, with its
// host when the class has hosts.
func printStatus(f *cmdutil.Factory, doc ClassStatus) error {
	hosts := false
	for _, l := range doc.Labs {
		hosts = hosts || l.Host != ""
	}
	faults := false
	for _, l := range doc.Labs {
		faults = faults || len(l.Faults) > 0
	}
	w := tabwriter.NewWriter(f.Streams.Out, 0, 4, 2, ' ', 0)
	head := "LEARNER\tLAB\tNETWORK\tNODES UP\tLAST VERIFY\tSTAGE"
	if hosts {
		head = "LEARNER\tLAB\tHOST\tNETWORK\tNODES UP\tLAST VERIFY\tSTAGE"
	}
	if faults {
		head += "\tFAULT (MINUTES TAKEN, DIAGNOSED, FIXED)"
	}
	fmt.Fprintln(w, head)
	for _, l := range doc.Labs {
		stage := l.Stage
		if stage == "" {
			stage = "-"
		}
		verify := l.Verify.Summary()
		if l.Error != "" {
			verify += " (" + l.Error + ")"
		}
		up := fmt.Sprintf("%d/%d", l.NodesUp, l.NodesTotal)
		if l.Unreachable {
			up = "unreachable"
		}
		cols := []string{l.Learner, l.Lab, l.CIDR, up, verify, stage}
		if hosts {
			host := l.Host
			if host == "" {
				host = "-"
			}
			cols = []string{l.Learner, l.Lab, host, l.CIDR, up, verify, stage}
		}
		if faults {
			cols = append(cols, faultCell(l.Faults))
		}
		fmt.Fprintln(w, strings.Join(cols, "\t"))
	}
	return w.Flush()
}

// faultCell is the FAULT column: each fault, how long the learner has
// taken, and whether their diagnosis named it and fixed it
// ("api-int-wrong-address (12m, diagnosed, fixed)"), "-" for none.
func faultCell(fs []FaultStatus) string {
	if len(fs) == 0 {
		return "-"
	}
	var out []string
	for _, f := range fs {
		cell := fmt.Sprintf("%s (%dm", f.Name, f.Minutes)
		if f.DiagnosedAt != nil {
			cell += ", diagnosed"
		}
		if f.FixedAt != nil {
			cell += ", fixed"
		}
		out = append(out, cell+")")
	}
	return strings.Join(out, ", ")
}

// stageReached is the highest stage done in the stage records in dir of
// the lab whose state has labUUID ("" when none): another lab's records,
// one of the same name built earlier, are not this lab's progress.
func stageReached(dir, labUUID string) string {
	recs, err := stages.ReadRecords(dir, labUUID)
	if err != nil {
		return ""
	}
	return stages.Reached(stages.FoldRecords(recs))
}
