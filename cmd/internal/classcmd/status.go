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

// FaultStatus is a fault set on a learner's lab, and since when.
type FaultStatus struct {
	Name     string    `json:"name"`
	BrokenAt time.Time `json:"brokenAt"`
	// Minutes is how long it has been set, when class status ran.
	Minutes int `json:"minutes"`
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
	if active, err := l.ActiveFaults(); err == nil {
		for _, a := range active {
			ls.Faults = append(ls.Faults, FaultStatus{Name: a.Name, BrokenAt: a.At, Minutes: int(time.Since(a.At).Minutes())})
		}
	} else {
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
		head += "\tFAULT (BROKEN FOR)"
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

// faultCell is the FAULT column: each fault and how long it has been set
// ("lb-no-bootstrap-mcs (12m)"), "-" for none.
func faultCell(fs []FaultStatus) string {
	if len(fs) == 0 {
		return "-"
	}
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s (%dm)", f.Name, f.Minutes))
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
