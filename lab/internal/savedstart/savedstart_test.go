package savedstart

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/hypervisor"
)

type port = hypervisor.Domains

// domains plays libvirt for the Starter: nodes are defined (their XML),
// the template writes line to its console when created, saves write a
// save image of the template, restores record the definition they read.
type domains struct {
	port       // nil: a call the Starter must not make panics
	t          *testing.T
	log        string
	line       string
	restoreErr error
	// refuseErr fails a restore before it reads the image.
	refuseErr error

	mu        sync.Mutex
	defs      map[string]string
	template  string // the running template's definition
	created   int
	destroyed []string
	restored  map[string]string // node -> definition read from its image
	leftover  *hypervisor.Object
}

func (d *domains) DomainSaveXML(_ context.Context, name string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	x, ok := d.defs[name]
	if !ok {
		return "", fmt.Errorf("domain %s: %w", name, hypervisor.ErrNotFound)
	}
	return x, nil
}

func (d *domains) CreateDomain(_ context.Context, x string) error {
	d.mu.Lock()
	d.created++
	d.template = x
	d.mu.Unlock()
	return os.WriteFile(d.log, []byte("[    0.0] kernel\n"+d.line+"\n"), 0o644)
}

func (d *domains) LookupDomain(_ context.Context, name string) (*hypervisor.Object, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.leftover != nil && d.leftover.Name == name {
		return d.leftover, nil
	}
	if d.template != "" && strings.Contains(d.template, "<name>"+name+"</name>") {
		return &hypervisor.Object{Name: name, Active: true}, nil
	}
	return nil, fmt.Errorf("domain %s: %w", name, hypervisor.ErrNotFound)
}

func (d *domains) DestroyDomain(_ context.Context, name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.destroyed = append(d.destroyed, name)
	d.template, d.leftover = "", nil
	return nil
}

func (d *domains) SaveDomain(_ context.Context, name, path string) error {
	d.mu.Lock()
	x := d.template
	d.template = "" // a save stops the domain
	d.mu.Unlock()
	if x == "" {
		return fmt.Errorf("domain %s is not running", name)
	}
	return os.WriteFile(path, saveImage(d.t, x, testCookie, 65536, []byte("QEVM stream")), 0o600)
}

func (d *domains) RestoreDomainPaused(_ context.Context, path string) error {
	if d.refuseErr != nil {
		return d.refuseErr
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	h, err := parseHeader(data)
	require.NoError(d.t, err)
	require.Equal(d.t, "QEVM stream", string(data[headerSize+int(h.dataLen):]))
	if d.restoreErr != nil {
		return d.restoreErr
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.restored == nil {
		d.restored = map[string]string{}
	}
	d.restored[xmlDomainName(string(h.xml))] = string(h.xml)
	return nil
}

func xmlDomainName(x string) string {
	_, rest, _ := strings.Cut(x, "<name>")
	name, _, _ := strings.Cut(rest, "</name>")
	return name
}

// nodeDefs are two nodes of one shape, as the test's lab defined them.
func nodeDefs(t *testing.T) map[string]string {
	x := nodeXML(t)
	return map[string]string{
		"bootlab-ck2-master-0":  x,
		"bootlab-ck2-bootstrap": strings.ReplaceAll(strings.ReplaceAll(x, "master-0", "bootstrap"), "52:54:00:", "52:54:01:"),
	}
}

// readyLine is an agent's ready line, 0.05 s into its boot.
const readyLine = wire.SavedStartReady + " (uptime 0.05 s)"

func newStarter(t *testing.T, d *domains, dir string) *Starter {
	return &Starter{
		HV: d, Dir: dir, Libvirt: "9.0.0", Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Template: Template{Name: "bootlab-ck2-saved_start", Metadata: `<lab xmlns="https://bootlab.dev/xmlns/lab/v1" name="ck2" node="saved_start"/>`,
			Log: d.log, Owns: func(o *hypervisor.Object) error {
				if o.XML == "foreign" {
					return errors.New("domain bootlab-ck2-saved_start is not this lab's")
				}
				return nil
			}},
		ReadyTimeout: 2 * time.Second,
	}
}

func startAll(t *testing.T, s *Starter, names ...string) []error {
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.Start(context.Background(), n) }()
	}
	wg.Wait()
	return errs
}

func TestStartMakesOneImageAndRestoresEachNodeAsItself(t *testing.T) {
	dir, logDir := t.TempDir(), t.TempDir()
	d := &domains{t: t, log: filepath.Join(logDir, "saved_start.log"), line: readyLine, defs: nodeDefs(t)}
	s := newStarter(t, d, dir)
	for _, err := range startAll(t, s, "bootlab-ck2-master-0", "bootlab-ck2-bootstrap") {
		require.NoError(t, err)
	}
	assert.Equal(t, 1, d.created, "one template for two nodes of one shape")
	assert.Equal(t, d.defs["bootlab-ck2-master-0"], d.restored["bootlab-ck2-master-0"], "each image names its node")
	assert.Equal(t, d.defs["bootlab-ck2-bootstrap"], d.restored["bootlab-ck2-bootstrap"])
	imgs, _ := filepath.Glob(filepath.Join(dir, "saved-start-*.img"))
	assert.Len(t, imgs, 1)
	pipes, _ := filepath.Glob(filepath.Join(dir, ".restore-*"))
	assert.Empty(t, pipes, "the pipes are removed once restored")
	assert.NoFileExists(t, d.log, "the template's console log is removed")

	// The next up (another Starter) uses the image as it is.
	d2 := &domains{t: t, log: d.log, defs: nodeDefs(t)}
	for _, err := range startAll(t, newStarter(t, d2, dir), "bootlab-ck2-bootstrap") {
		require.NoError(t, err)
	}
	assert.Zero(t, d2.created, "no template when the image exists")
	assert.Contains(t, d2.restored, "bootlab-ck2-bootstrap")
}

func TestStartWithoutATemplateLeavesTheNodeToBoot(t *testing.T) {
	for name, tc := range map[string]struct {
		line     string
		want     string
		remember bool
	}{
		"declined":   {wire.SavedStartDeclined + "virtio_pci is built into the kernel", "cannot make saved starts: virtio_pci is built into the kernel", true},
		"silent":     {"", "did not write", false},
		"fast clock": {wire.SavedStartReady + " (uptime 40.00 s)", "its clock runs fast", false},
		"old agent":  {wire.SavedStartReady, "has no uptime", false},
		"panicked":   {"[    2.4] Kernel panic - not syncing: System is deadlocked on memory", "panicked: not syncing: System is deadlocked on memory", false},
	} {
		t.Run(name, func(t *testing.T) {
			dir, logDir := t.TempDir(), t.TempDir()
			d := &domains{t: t, log: filepath.Join(logDir, "saved_start.log"), line: tc.line, defs: nodeDefs(t)}
			s := newStarter(t, d, dir)
			s.ReadyTimeout = 300 * time.Millisecond
			err := s.Start(context.Background(), "bootlab-ck2-master-0")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, []string{"bootlab-ck2-saved_start"}, d.destroyed, "the template is stopped")
			assert.Empty(t, d.restored)
			assert.FileExists(t, d.log, "the console of a template that failed stays, for its error names it")

			d2 := &domains{t: t, log: d.log, line: readyLine, defs: nodeDefs(t)}
			err = newStarter(t, d2, dir).Start(context.Background(), "bootlab-ck2-master-0")
			if tc.remember {
				assert.ErrorContains(t, err, tc.want, "a kernel that declined is remembered")
				assert.Zero(t, d2.created)
			} else {
				assert.NoError(t, err, "a template too slow once is tried again")
				assert.Equal(t, 1, d2.created)
			}
		})
	}
}

func TestARefusedImageIsRemadeNextTime(t *testing.T) {
	dir, logDir := t.TempDir(), t.TempDir()
	d := &domains{t: t, log: filepath.Join(logDir, "saved_start.log"), line: readyLine, defs: nodeDefs(t),
		restoreErr: errors.New("operation failed: job 'restore' failed: Unknown savevm section")}
	err := newStarter(t, d, dir).Start(context.Background(), "bootlab-ck2-master-0")
	assert.ErrorContains(t, err, "Unknown savevm section")
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, p := range left {
		assert.True(t, strings.HasSuffix(p, ".lock"), "only the lock file is left: %s", p)
	}
}

func TestARestoreThatNeverReadsLeavesNoFeederWaiting(t *testing.T) {
	dir, logDir := t.TempDir(), t.TempDir()
	d := &domains{t: t, log: filepath.Join(logDir, "saved_start.log"), line: readyLine, defs: nodeDefs(t),
		refuseErr: errors.New("Requested operation is not valid: domain is already active")}
	done := make(chan error, 1)
	go func() { done <- newStarter(t, d, dir).Start(context.Background(), "bootlab-ck2-master-0") }()
	select {
	case err := <-done:
		assert.ErrorContains(t, err, "already active")
	case <-time.After(10 * time.Second):
		t.Fatal("Start still waits for a reader that never came")
	}
	pipes, _ := filepath.Glob(filepath.Join(dir, ".restore-*"))
	assert.Empty(t, pipes)
}

func TestAForeignDomainOfTheTemplatesNameIsLeftAlone(t *testing.T) {
	dir, logDir := t.TempDir(), t.TempDir()
	d := &domains{t: t, log: filepath.Join(logDir, "saved_start.log"), line: readyLine, defs: nodeDefs(t),
		leftover: &hypervisor.Object{Name: "bootlab-ck2-saved_start", XML: "foreign", Active: true}}
	err := newStarter(t, d, dir).Start(context.Background(), "bootlab-ck2-master-0")
	assert.ErrorContains(t, err, "not this lab's")
	assert.Zero(t, d.created)
	assert.Empty(t, d.destroyed)
}

func TestSweepRemovesOnlyOldCopies(t *testing.T) {
	dir := t.TempDir()
	old, fresh, other := filepath.Join(dir, ".restore-a-1.tmp"), filepath.Join(dir, ".restore-b-2.tmp"), filepath.Join(dir, "initramfs.img")
	for _, p := range []string{old, fresh, other} {
		require.NoError(t, os.WriteFile(p, nil, 0o600))
	}
	now := time.Now()
	require.NoError(t, os.Chtimes(old, now.Add(-2*time.Hour), now.Add(-2*time.Hour)))
	sweep(dir, now)
	assert.NoFileExists(t, old)
	assert.FileExists(t, fresh, "a copy in use is young")
	assert.FileExists(t, other)
}

func TestCheckClockRefusesAFastTemplateClock(t *testing.T) {
	assert.NoError(t, checkClock(" (uptime 1.90 s)", 2*time.Second), "a kernel starts after its domain")
	assert.NoError(t, checkClock(" (uptime 2.60 s)", 2*time.Second), "a quarter and 0.2 s of slack")
	assert.ErrorContains(t, checkClock(" (uptime 2.80 s)", 2*time.Second), "its clock runs fast")
	assert.ErrorContains(t, checkClock(" (uptime 5.6 s)", 2*time.Second), "5.6s of uptime in 2s")
	assert.ErrorContains(t, checkClock("", time.Second), "no uptime")
}
