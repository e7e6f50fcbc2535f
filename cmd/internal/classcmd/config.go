package classcmd

import (
	"context"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/lab/class"
)

// ConfigOptions are the options of `class config`.
type ConfigOptions struct {
	Class  ClassFlags
	Output string
}

// ClassConfig is `class config -o json`: every lab's effective spec, and
// for a class with hosts where each lab is placed.
type ClassConfig struct {
	Class     string      `json:"class"`
	Placement string      `json:"placement,omitempty"`
	Hosts     []HostEntry `json:"hosts,omitempty"`
	Labs      []LabEntry  `json:"labs"`
}

// HostEntry is one host of a class document: what was measured of it
// and the learners placed on it.
type HostEntry struct {
	Name     string          `json:"name"`
	URI      string          `json:"uri"`
	MaxLabs  *int            `json:"maxLabs,omitempty"`
	Capacity *class.Capacity `json:"capacity,omitempty"`
	// Error says why the host could not be reached or measured.
	Error    string   `json:"error,omitempty"`
	Learners []string `json:"learners"`
}

// LabEntry is one learner's lab in a class document.
type LabEntry struct {
	Learner string     `json:"learner"`
	Lab     string     `json:"lab"`
	Host    string     `json:"host,omitempty"`
	Spec    *spec.Spec `json:"spec"`
}

// NewCmdConfig builds `class config`.
func NewCmdConfig(f *cmdutil.Factory, runF func(*ConfigOptions) error) *cobra.Command {
	opts := &ConfigOptions{}
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print every lab's effective spec, after checking the class against this host",
		Example: `  bootlab class config -f class.yaml
  bootlab class config -f class.yaml -o json`,
		Long: `Expand the class into one lab per learner and print each lab's effective
spec: the template with the learner's overrides, named <class>-<learner>, with
the network carved from the address pool and every default filled in.

The class is checked as class up checks it (each lab's spec; distinct
networks, bridges, MACs and load balancer addresses; no overlap with host
routes, libvirt networks or other labs; memory and disk), so what config
prints is what up builds. A class with hosts is placed first: the output
starts with the placement (each host's CPUs, guests, memory, disk, labs
there and the learners placed on it), and each lab names its host.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.OutputFlag(opts.Output, "yaml", "json"); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runConfig(cmd.Context(), f, opts)
		},
	}
	addClassFlags(cmd, &opts.Class, true)
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "yaml", "output format: yaml or json")
	return cmd
}

func runConfig(ctx context.Context, f *cmdutil.Factory, opts *ConfigOptions) error {
	p, err := plan(ctx, f, &opts.Class)
	if err != nil {
		return err
	}
	if opts.Output == "json" {
		return cmdutil.WriteJSON(f.Streams.Out, "ClassConfig", configDoc(p))
	}
	data, err := p.Marshal()
	if err != nil {
		return err
	}
	_, err = f.Streams.Out.Write(data)
	return err
}

func configDoc(p *class.Plan) ClassConfig {
	doc := ClassConfig{Class: p.Class.Name, Placement: string(p.Placement), Labs: []LabEntry{}}
	for _, h := range p.Hosts {
		e := HostEntry{Name: h.Name, URI: h.URI, MaxLabs: h.MaxLabs, Capacity: h.Capacity, Learners: h.Labs}
		if e.Learners == nil {
			e.Learners = []string{}
		}
		if h.Err != nil {
			e.Error = h.Err.Error()
		}
		doc.Hosts = append(doc.Hosts, e)
	}
	for _, l := range p.Labs {
		doc.Labs = append(doc.Labs, LabEntry{Learner: l.Learner, Lab: l.Spec.Name, Host: l.Host, Spec: l.Spec})
	}
	return doc
}
