// Package classcmd is `bootlab class`: many isolated labs from one class
// spec, built in parallel, looked at, reset and removed together.
package classcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/bootlab/bootlab/lab"
	labspec "github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/internal/userfile"
	"github.com/bootlab/bootlab/lab/class"
)

// DefaultClassFile is read when -f is not given and it exists.
const DefaultClassFile = "class.yaml"

// NewCmdClass builds the `class` command group.
func NewCmdClass(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "class",
		Short: "Many isolated labs from one class spec: one per learner, built in parallel",
		Example: `  sudo bootlab class up -f class.yaml
  sudo bootlab class status -f class.yaml
  sudo bootlab class down -f class.yaml --yes`,
		Long: `A class spec (class.yaml) is a lab template, the learners and an address
pool. bootlab makes one lab per learner, called <class>-<learner>, each on its
own /24, bridge and load balancer address, checks all of them together against
the host before creating anything, and builds them in parallel. Every lab is an
ordinary lab: ` + "`bootlab lab ... --name <class>-<learner>`" + ` acts on it. See docs/class.md.`,
		Args: cobra.ArbitraryArgs,
		RunE: cmdutil.UnknownSubcommand,
	}
	cmd.AddCommand(
		NewCmdConfig(f, nil),
		NewCmdUp(f, nil),
		NewCmdStatus(f, nil),
		NewCmdVerify(f, nil),
		NewCmdDown(f, nil),
		NewCmdReset(f, nil),
		NewCmdCheckpoint(f, nil),
		NewCmdHandouts(f, nil),
		NewCmdBreak(f, nil),
	)
	return cmd
}

// ClassFlags say which class a command acts on: the class file, or (for
// commands on a built class) its name.
type ClassFlags struct {
	File string
	Name string
	// needFile is set by the commands that read the spec (config, up).
	needFile bool
	cmd      *cobra.Command
}

func addClassFlags(cmd *cobra.Command, cf *ClassFlags, needFile bool) {
	cf.cmd, cf.needFile = cmd, needFile
	cmd.Flags().StringVarP(&cf.File, "file", "f", DefaultClassFile, "class spec file (YAML; - reads standard input)")
	if !needFile {
		cmd.Flags().StringVar(&cf.Name, "name", "", "class name (instead of -f: the class's labs are found by their state)")
	}
}

// Load reads the class spec file, or standard input for -f -. A file that
// cannot be read (a directory, say) is invalid input, exit 3, as for a lab
// spec.
func (cf *ClassFlags) Load() (*class.Spec, error) {
	if cf.File != userfile.StdinPath || cf.cmd == nil {
		c, err := class.Load(cf.File)
		var ve *labspec.ValidationError
		if err != nil && !errors.As(err, &ve) {
			return nil, cmdutil.WithCode(cmdutil.ExitInvalid, err)
		}
		return c, err
	}
	data, err := userfile.ReadStdin(cf.cmd.Context(), cf.cmd.InOrStdin(), userfile.MaxTextBytes)
	if err != nil && cf.cmd.Context().Err() != nil {
		return nil, err // interrupted: app.Run says so
	}
	if err != nil {
		return nil, cmdutil.WithCode(cmdutil.ExitInvalid, fmt.Errorf("class spec: %w", err))
	}
	return class.Parse(data, "standard input (-f -)")
}

// ClassName is the class the flags name: --name, else the name in the file.
func (cf *ClassFlags) ClassName() (string, error) {
	if cf.Name != "" {
		return cf.Name, nil
	}
	explicit := cf.cmd != nil && cf.cmd.Flags().Changed("file")
	if _, err := os.Stat(cf.File); err != nil && !explicit {
		return "", cmdutil.UsageErrorf("no class named: pass --name CLASS or -f CLASS.yaml (no ./%s here)", DefaultClassFile)
	}
	c, err := cf.Load()
	if err != nil {
		return "", err
	}
	if c.Name == "" {
		return "", cmdutil.WithCode(cmdutil.ExitInvalid, fmt.Errorf("%s: name: missing: name the class", cf.File))
	}
	return c.Name, nil
}

// templateURI is the libvirt URI the class's labs use (the template's, or
// the default).
func templateURI(c *class.Spec) string {
	s := &labspec.Spec{}
	if v, ok := c.Template["libvirt"].(map[string]any); ok {
		if u, ok := v["uri"].(string); ok {
			s.Libvirt.URI = u
		}
	}
	s.Defaults()
	return s.Libvirt.URI
}

// plan loads the class, measures its hosts (every host of hosts at once,
// or the one its template names) and expands and checks it against them.
func plan(ctx context.Context, f *cmdutil.Factory, cf *ClassFlags) (*class.Plan, error) {
	c, err := cf.Load()
	if err != nil {
		return nil, err
	}
	if err := c.Check(cf.File); err != nil {
		return nil, err
	}
	record, err := class.ReadPlacement(class.Dir(labspec.DefaultHome(), c.Name))
	if err != nil {
		return nil, err
	}
	// Every lab's pool is the default one under the same directory: its
	// filesystem is what the labs' disks take.
	pool := &labspec.Spec{Name: class.LabName(c.Name, "x")}
	pool.Defaults()
	facts, err := lab.ClassFacts(ctx, f.Connector(), c.Targets(templateURI(c)), pool.Storage.PoolDir, f.Log)
	if err != nil {
		return nil, err
	}
	facts.Placed = class.PlacedHosts(record)
	return class.Expand(c, cf.File, facts)
}

// member is a lab of a built class, found by its state: Spec is the spec
// as built, or (Built false) the lab's name and directory on the host the
// class placed it on.
type member struct {
	Learner string
	Spec    *labspec.Spec
	Built   bool
	Dir     string
	// Host is the name of the host the class placed the lab on ("" for a
	// class without hosts).
	Host string
}

// members finds the labs whose state says they belong to class name,
// sorted by lab name. A lab half built (no complete up) is named by its
// directory, as `lab down --all` does, on the host class up placed it on.
func members(name string) ([]member, error) {
	labs, err := lab.FindLabs(labspec.DefaultHome())
	if err != nil {
		return nil, err
	}
	record, err := class.ReadPlacement(class.Dir(labspec.DefaultHome(), name))
	if err != nil {
		return nil, err
	}
	var out []member
	for _, l := range labs {
		if l.Err != nil || l.Class != name {
			continue
		}
		if !l.Built {
			class.Locate(l.Spec, record)
		}
		out = append(out, member{Learner: strings.TrimPrefix(l.Name, name+"-"), Spec: l.Spec, Built: l.Built, Dir: l.Dir, Host: record[l.Name].Host})
	}
	return out, nil
}

// noMembers is the error of a command on a class with no labs here.
// classMembers is the class the flags name and its labs on this host;
// with required, a class with no labs is an error (exit 5).
func classMembers(cf *ClassFlags, required bool) (string, []member, error) {
	name, err := cf.ClassName()
	if err != nil {
		return "", nil, err
	}
	ms, err := members(name)
	if err != nil {
		return "", nil, err
	}
	if required && len(ms) == 0 {
		return "", nil, noMembers(name)
	}
	return name, ms, nil
}

func noMembers(name string) error {
	return cmdutil.WithCode(cmdutil.ExitNoLab, fmt.Errorf("class %s has no labs on this host (%s): `bootlab class up -f CLASS.yaml` builds them", name, filepath.Join(labspec.DefaultHome(), "labs")))
}

// defaultParallel is how many labs class up builds at once: one per two
// cores, at least two, at most four (TCG boots are CPU-bound; libvirt and
// haproxy serialize the rest).
func defaultParallel() int {
	n := runtime.NumCPU() / 2
	return max(2, min(n, 4))
}

// labFactory is f for one lab of a parallel run: its step lines are plain
// lines prefixed with the lab's name, its logs carry the lab's name.
func labFactory(f *cmdutil.Factory, name string, mu *sync.Mutex) *cmdutil.Factory {
	lf := *f
	lf.Log = f.Log.With("lab", name)
	if f.Status.Discarding() {
		return &lf
	}
	if f.JSONLogs {
		lf.Status = status.NewJSON(&prefixWriter{w: f.Streams.ErrOut, mu: mu})
		return &lf
	}
	lf.Status = status.New(&prefixWriter{w: f.Streams.ErrOut, mu: mu, prefix: "[" + name + "] "}, false)
	return &lf
}

// prefixWriter writes whole lines, each with a prefix, under a shared lock,
// so the lines of labs built at once do not interleave mid-line.
type prefixWriter struct {
	w      io.Writer
	mu     *sync.Mutex
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := strings.IndexByte(string(p.buf), '\n')
		if i < 0 {
			return len(b), nil
		}
		line := p.prefix + string(p.buf[:i+1])
		p.buf = p.buf[i+1:]
		p.mu.Lock()
		_, err := io.WriteString(p.w, line)
		p.mu.Unlock()
		if err != nil {
			return len(b), err
		}
	}
}

// pooledFactory is f for a command over many labs: one connection per
// host, shared by its labs, and a host that does not answer asked once
// (lab.Pooled). closeAll closes them.
func pooledFactory(f *cmdutil.Factory) (*cmdutil.Factory, func()) {
	connect, closeAll := lab.Pooled(f.Connector())
	pf := *f
	pf.Connect = connect
	return &pf, closeAll
}

// exitFor is the error of a class operation from its results: nil when all
// succeeded, else the summary (exit 1, or the one code every failure shares).
func exitFor(verb string, rs []class.Result) error {
	err := class.Summary(verb, rs)
	if err == nil {
		return nil
	}
	code := -1
	for _, r := range class.Failed(rs) {
		c := cmdutil.ExitError
		var ec cmdutil.ExitCoder
		if errors.As(r.Err, &ec) {
			c = ec.ExitCode()
		}
		if code != -1 && c != code {
			code = cmdutil.ExitError
			break
		}
		code = c
	}
	return cmdutil.WithCode(code, err)
}
