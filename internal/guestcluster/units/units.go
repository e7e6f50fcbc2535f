package units

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/bootlab/bootlab/internal/guestcluster/journal"
)

// Unit is a service the agent runs as systemd would.
type Unit struct {
	// Name is the unit's name (approve-csr.service); Description its
	// Description= (the installer's unit file).
	Name, Description string
	// Run is ExecStart: it returns when the service exits, or when ctx
	// ends (stop). An error is a failure, restarted after RestartDelay as
	// Restart=on-failure does.
	Run func(ctx context.Context) error
}

// RestartDelay is the installer's units' RestartSec= (approve-csr.service,
// progress.service: Restart=on-failure, RestartSec=5s).
const RestartDelay = 5 * time.Second

// The active states systemctl is-active prints.
const (
	Active   = "active"
	Inactive = "inactive"
	Failed   = "failed"
)

// State is a unit's state as systemctl status shows it.
type State struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Active      string    `json:"active"`
	Since       time.Time `json:"since"`
	// Result is why it last stopped: success, exit-code.
	Result string `json:"result,omitempty"`
}

// Manager runs the units.
type Manager struct {
	journalDir   string
	restartDelay time.Duration
	mu           sync.Mutex
	units        map[string]*unit
}

type unit struct {
	Unit
	state  State
	cancel context.CancelFunc
	done   chan struct{}
	// gen counts starts: a run that ended after a newer start changes nothing.
	gen int
}

// ErrNoUnit is a unit the manager does not run.
var ErrNoUnit = errors.New("no such unit")

// New is a manager of us, writing systemd's lines to the journal in dir.
// Nothing runs until Start.
func New(dir string, us ...Unit) *Manager {
	m := &Manager{journalDir: dir, restartDelay: RestartDelay, units: map[string]*unit{}}
	for _, u := range us {
		m.units[u.Name] = &unit{Unit: u, state: State{Name: u.Name, Description: u.Description, Active: Inactive, Since: time.Now()}}
	}
	return m
}

// WithRestartDelay sets the pause before a failed unit is restarted (tests).
func (m *Manager) WithRestartDelay(d time.Duration) *Manager {
	m.restartDelay = d
	return m
}

// Names are the units, sorted.
func (m *Manager) Names() []string {
	var out []string
	for n := range m.units {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// systemd logs a unit's jobs to the unit's journal as systemd[1].
func (m *Manager) log(u *unit, msg string) {
	journal.NewWriter(m.journalDir, u.Name, "systemd", 1).Print(journal.PriInfo, msg)
}

// title is "name - Description", as systemd names a unit in its job lines.
func (u *unit) title() string {
	if u.Description == "" {
		return u.Name
	}
	return u.Name + " - " + u.Description
}

func (m *Manager) get(name string) (*unit, error) {
	u, ok := m.units[name]
	if !ok {
		return nil, fmt.Errorf("%w %s (the agent runs %v)", ErrNoUnit, name, m.Names())
	}
	return u, nil
}

// Start starts unit name unless it is active (systemctl start).
func (m *Manager) Start(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, err := m.get(name)
	if err != nil {
		return err
	}
	if u.state.Active == Active {
		return nil
	}
	m.startLocked(u)
	return nil
}

func (m *Manager) startLocked(u *unit) {
	ctx, cancel := context.WithCancel(context.Background())
	u.gen++
	gen := u.gen
	u.cancel, u.done = cancel, make(chan struct{})
	u.state.Active, u.state.Since, u.state.Result = Active, time.Now(), ""
	m.log(u, "Started "+u.title()+".")
	go m.run(ctx, u, gen, u.done)
}

// run runs u's ExecStart and records how it ended: stopped, exited, or
// failed and restarted after restartDelay.
func (m *Manager) run(ctx context.Context, u *unit, gen int, done chan struct{}) {
	err := u.Run(ctx)
	close(done)
	m.mu.Lock()
	defer m.mu.Unlock()
	if u.gen != gen || ctx.Err() != nil {
		return // Stop (or a newer start) owns the state.
	}
	u.cancel()
	if err == nil {
		u.state.Active, u.state.Since, u.state.Result = Inactive, time.Now(), "success"
		m.log(u, u.Name+": Deactivated successfully.")
		return
	}
	u.state.Active, u.state.Since, u.state.Result = Failed, time.Now(), "exit-code"
	m.log(u, u.Name+": Main process exited, status=1/FAILURE: "+err.Error())
	m.log(u, u.Name+": Failed with result 'exit-code'.")
	time.AfterFunc(m.restartDelay, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if u.gen == gen && u.state.Active == Failed {
			m.log(u, u.Name+": Scheduled restart job.")
			m.startLocked(u)
		}
	})
}

// Stop stops unit name and waits for it to end (systemctl stop).
func (m *Manager) Stop(ctx context.Context, name string) error {
	m.mu.Lock()
	u, err := m.get(name)
	if err != nil {
		m.mu.Unlock()
		return err
	}
	if u.state.Active != Active {
		// A failed unit waiting for its restart is stopped too.
		u.gen++
		if u.state.Active == Failed {
			u.state.Active, u.state.Since = Inactive, time.Now()
		}
		m.mu.Unlock()
		return nil
	}
	m.log(u, "Stopping "+u.title()+"...")
	u.gen++
	cancel, done := u.cancel, u.done
	u.state.Active, u.state.Since, u.state.Result = Inactive, time.Now(), "success"
	m.mu.Unlock()
	cancel()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("stop %s: %w", name, ctx.Err())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log(u, u.Name+": Deactivated successfully.")
	m.log(u, "Stopped "+u.title()+".")
	return nil
}

// Restart stops unit name, then starts it (systemctl restart).
func (m *Manager) Restart(ctx context.Context, name string) error {
	if err := m.Stop(ctx, name); err != nil {
		return err
	}
	return m.Start(name)
}

// Status is unit name's state.
func (m *Manager) Status(name string) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, err := m.get(name)
	if err != nil {
		return State{}, err
	}
	return u.state, nil
}
