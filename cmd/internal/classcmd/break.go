package classcmd

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/class"
	labspec "github.com/bootlab/bootlab/lab/spec"
)

// BreakOptions are the options of `class break`.
type BreakOptions struct {
	LabsOptions
	// Fault is the fault every learner gets (with Undo: the one to undo,
	// "" all).
	Fault string
	// Random gives each learner one of the catalogue's faults, drawn with
	// Seed (SeedSet: the trainer chose it).
	Random  bool
	Seed    uint64
	SeedSet bool
	// Among limits --random to these faults (all when empty).
	Among []string
	Undo  bool
	// Learners limits the command to these learners (all when empty).
	Learners []string
}

// NewCmdBreak builds `class break`: lab break on every learner's lab.
func NewCmdBreak(f *cmdutil.Factory, runF func(*BreakOptions) error) *cobra.Command {
	opts := &BreakOptions{}
	cmd := &cobra.Command{
		Use:   "break FAULT | --random [--seed N] | --undo [FAULT]",
		Short: "For trainers: set a fault on every learner's lab (one for all, or one each at random)",
		Example: `  bootlab class break lb-no-bootstrap-mcs --name ux
  bootlab class break --random --seed 7 --name ux
  bootlab class break --random --among etcd-peer-blocked,api-int-wrong-address --name ux
  bootlab class break --undo --name ux --learner alice`,
		Long: `Run ` + "`bootlab lab break`" + ` on every lab of the class (or on the labs of --learner),
--parallel at a time on each host: the same FAULT for everyone, or with
--random one fault of the catalogue each, drawn so the class gets as many
different faults as it can, each learner only one their lab can take (--among
limits the draw to the faults named). --seed N draws the same faults again;
without it the seed is printed, so the draw can be repeated. --undo undoes FAULT, or every
fault set, on each lab. ` + "`bootlab lab break --list`" + ` lists the faults.

Each learner sees the symptoms, never the fault's name; ` + "`bootlab class status`" + `
(the trainer's view) shows which fault each lab has and since when. One lab's
failure does not stop the others.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Fault = args[0]
			}
			opts.SeedSet = cmd.Flags().Changed("seed")
			switch {
			case opts.Random && (opts.Fault != "" || opts.Undo):
				return cmdutil.UsageErrorf("--random draws the faults: it takes no FAULT and no --undo")
			case (opts.SeedSet || len(opts.Among) > 0) && !opts.Random:
				return cmdutil.UsageErrorf("--seed and --among go with --random")
			case !opts.Random && !opts.Undo && opts.Fault == "":
				return cmdutil.UsageErrorf("name a fault (bootlab lab break --list lists them), or give --random or --undo")
			case opts.Parallel < 1:
				return cmdutil.UsageErrorf("--parallel %d: act on at least one lab at a time", opts.Parallel)
			}
			for _, f := range append([]string{opts.Fault}, opts.Among...) {
				if f != "" && !slices.Contains(faultNames(), f) {
					return cmdutil.UsageErrorf("no fault %q: the faults are %s (bootlab lab break --list)", f, strings.Join(faultNames(), ", "))
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return runClassBreak(cmd.Context(), f, opts)
		},
	}
	addClassFlags(cmd, &opts.Class, false)
	cmd.Flags().IntVar(&opts.Parallel, "parallel", defaultParallel(), "act on at most this many labs at once on each host")
	cmd.Flags().BoolVar(&opts.Random, "random", false, "give each learner one fault of the catalogue, drawn at random")
	cmd.Flags().Uint64Var(&opts.Seed, "seed", 0, "with --random: the draw's seed (the same seed, the same faults)")
	cmd.Flags().StringSliceVar(&opts.Among, "among", nil, "with --random: draw only among these faults (repeat, or separate with commas)")
	cmd.Flags().BoolVar(&opts.Undo, "undo", false, "undo FAULT, or every fault set, on each lab")
	cmd.Flags().StringSliceVar(&opts.Learners, "learner", nil, "act on this learner's lab only (repeat, or separate with commas)")
	return cmd
}

func faultNames() []string {
	var out []string
	for _, flt := range lab.Faults() {
		out = append(out, flt.Name)
	}
	return out
}

// drawFaults gives each learner (in order) a fault of names with seed:
// the catalogue shuffled, then dealt round, so the class gets as many
// different faults as it can and the same seed deals the same ones. A
// learner's turn skips the faults that cannot be set on their lab
// (applies); a learner no fault applies to gets none.
func drawFaults(learners, names []string, seed uint64, applies func(learner, fault string) bool) map[string]string {
	deck := slices.Clone(names)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	r.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
	out := map[string]string{}
	next := 0
	for _, l := range learners {
		for k := 0; k < len(deck); k++ {
			f := deck[(next+k)%len(deck)]
			if applies(l, f) {
				out[l] = f
				next = (next + k + 1) % len(deck)
				break
			}
		}
	}
	return out
}

// chooseLearners is ms limited to the learners named (all when none); a
// learner with no lab in the class is an error naming those who have one.
func chooseLearners(class string, ms []member, named []string) ([]member, error) {
	if len(named) == 0 {
		return ms, nil
	}
	var out []member
	var have []string
	for _, m := range ms {
		have = append(have, m.Learner)
		if slices.Contains(named, m.Learner) {
			out = append(out, m)
		}
	}
	for _, n := range named {
		if !slices.Contains(have, n) {
			return nil, cmdutil.WithCode(cmdutil.ExitNoLab, fmt.Errorf("--learner %s: class %s has no lab of learner %q (learners with a lab: %s)", n, class, n, strings.Join(have, ", ")))
		}
	}
	return out, nil
}

func runClassBreak(ctx context.Context, f *cmdutil.Factory, opts *BreakOptions) error {
	name, ms, err := classMembers(&opts.Class, true)
	if err != nil {
		return err
	}
	if ms, err = chooseLearners(name, ms, opts.Learners); err != nil {
		return err
	}
	faults := map[string]string{}
	if opts.Random {
		if !opts.SeedSet {
			opts.Seed = uint64(time.Now().UnixNano())
		}
		var learners []string
		specs := map[string]*labspec.Spec{}
		for _, m := range ms {
			learners = append(learners, m.Learner)
			specs[m.Learner] = m.Spec
		}
		catalogue := map[string]lab.Fault{}
		for _, flt := range lab.Faults() {
			catalogue[flt.Name] = flt
		}
		deck := faultNames()
		if len(opts.Among) > 0 {
			deck = slices.Compact(slices.Sorted(slices.Values(opts.Among)))
		}
		faults = drawFaults(learners, deck, opts.Seed, func(learner, fault string) bool {
			return catalogue[fault].Applies(specs[learner])
		})
		f.Status.Infof("drawing one fault per learner with --seed %d (the same seed draws the same faults)", opts.Seed)
	}
	verb := "break"
	if opts.Undo {
		verb = "break --undo"
	}
	rs := eachBuiltLab(ctx, f, ms, opts.Parallel, func(ctx context.Context, lf *cmdutil.Factory, l *lab.Lab, cl class.Lab) error {
		if opts.Undo {
			undone, err := l.Unbreak(ctx, opts.Fault)
			if err == nil {
				if len(undone) == 0 {
					lf.Status.Infof("no fault is set")
				} else {
					lf.Status.Infof("undid %s", strings.Join(undone, ", "))
				}
			}
			return err
		}
		fault := opts.Fault
		if opts.Random {
			if fault = faults[cl.Learner]; fault == "" {
				return fmt.Errorf("no fault of the catalogue can be set on lab %s", cl.Spec.Name)
			}
		}
		if err := l.Break(ctx, fault); err != nil {
			return err
		}
		lf.Status.Infof("set %s", fault)
		return nil
	})
	printResults(f, verb, rs)
	return exitFor("class "+verb, rs)
}
