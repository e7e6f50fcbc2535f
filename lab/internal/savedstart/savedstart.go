package savedstart

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"libvirt.org/go/libvirtxml"

	"github.com/bootlab/bootlab/internal/timing"
	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/cache"
	"github.com/bootlab/bootlab/lab/hypervisor"
)

// Template is the domain a lab makes a save image with.
type Template struct {
	// Name is its domain name; Metadata its <metadata> content (the lab's,
	// so a template left by an interrupted up is the lab's to remove).
	Name, Metadata string
	// Log is its console log, read for wire.SavedStartReady.
	Log string
	// Owns says whether an existing domain of Name is this lab's (an
	// earlier template), which Start then stops.
	Owns func(*hypervisor.Object) error
}

// Starter starts the nodes of one lab up from save images.
type Starter struct {
	HV hypervisor.Domains
	// Dir holds the images (the probe image's cache directory): this
	// machine's, where libvirtd reads and writes them.
	Dir string
	// Libvirt is the daemon's version, part of every image's key.
	Libvirt  string
	Template Template
	Log      *slog.Logger
	// ReadyTimeout bounds the template's boot to its ready line (30 s
	// when zero: a TCG boot takes 2 s here, 5 on a loaded host).
	ReadyTimeout time.Duration

	mu     sync.Mutex
	images map[string]*made
	swept  sync.Once
}

// made is one image's making, shared by the nodes that wait for it.
type made struct {
	done chan struct{}
	path string
	err  error
}

// Start starts the defined, stopped domain name, paused, from the save
// image of its shape, made first when there is none. An error leaves the
// domain stopped, for the caller to boot.
func (s *Starter) Start(ctx context.Context, name string) error {
	x, err := s.HV.DomainSaveXML(ctx, name)
	if err != nil {
		return err
	}
	key, err := Key(x, emulatorID(x), s.Libvirt)
	if err != nil {
		return err
	}
	img, err := s.image(ctx, key, x)
	if err != nil {
		return err
	}
	s.swept.Do(func() { sweep(s.Dir, time.Now()) })
	began := time.Now()
	// The node's image is the template's with the node's own definition
	// in its header: streamed to libvirt through a named pipe, not copied
	// (some 90 MB a node, written and deleted).
	fifo := filepath.Join(s.Dir, ".restore-"+name+"-"+randomSuffix()+".fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		return fmt.Errorf("make the pipe %s: %w", fifo, err)
	}
	defer os.Remove(fifo)
	stop := make(chan struct{})
	fed := make(chan error, 1)
	go func() { fed <- feedImage(img, fifo, x, stop) }()
	err = s.HV.RestoreDomainPaused(ctx, fifo)
	close(stop)
	if ferr := <-fed; err == nil && ferr != nil {
		err = ferr
	}
	if err != nil {
		if ctx.Err() == nil {
			// Remade at the next up: an image QEMU or libvirt refuses
			// would fail every node.
			os.Remove(img)
		}
		return err
	}
	timing.Log(s.Log, "nodes", name+" restore", time.Since(began))
	return nil
}

// feedImage writes the node's image into the pipe at fifo once libvirt
// opens it for reading; it gives up when stop closes first (the restore
// failed before reading).
func feedImage(img, fifo, x string, stop <-chan struct{}) error {
	var fd int
	for {
		var err error
		fd, err = unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.ENXIO) { // ENXIO: no reader yet
			return fmt.Errorf("open %s: %w", fifo, err)
		}
		select {
		case <-stop:
			return errors.New("libvirt did not read the save image")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return err
	}
	w := os.NewFile(uintptr(fd), fifo)
	defer w.Close()
	if err := streamImage(img, w, x); err != nil {
		return fmt.Errorf("stream save image %s: %w", img, err)
	}
	return nil
}

// image returns the path of key's save image, making it once (in this
// process, and under a lock file across processes: a class's labs start
// together).
func (s *Starter) image(ctx context.Context, key, nodeXML string) (string, error) {
	s.mu.Lock()
	if s.images == nil {
		s.images = map[string]*made{}
	}
	m, ok := s.images[key]
	if !ok {
		m = &made{done: make(chan struct{}), path: filepath.Join(s.Dir, "saved-start-"+key+".img")}
		s.images[key] = m
		go func() {
			defer close(m.done)
			m.err = s.ensure(ctx, m.path, nodeXML)
		}()
	}
	s.mu.Unlock()
	select {
	case <-m.done:
		return m.path, m.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// ensure makes the image at path unless it exists, or a marker says its
// kernel cannot make one.
func (s *Starter) ensure(ctx context.Context, path, nodeXML string) error {
	if exists(path) {
		return nil
	}
	if why, err := os.ReadFile(path + ".none"); err == nil {
		return errors.New(string(bytes.TrimSpace(why)))
	}
	unlock, err := lockFile(ctx, path+".lock")
	if err != nil {
		return err
	}
	defer unlock()
	if exists(path) { // another process made it while this one waited
		return nil
	}
	began := time.Now()
	if err := s.make(ctx, path, nodeXML); err != nil {
		return err
	}
	timing.Log(s.Log, "nodes", s.Template.Name+" template", time.Since(began))
	s.Log.Info("made a saved-start image: the lab's probe nodes start from it (docs/benchmarks.md)", "image", path, "took", time.Since(began).Round(time.Millisecond).String())
	return nil
}

// make boots the template, waits for its agent's ready line and saves it.
func (s *Starter) make(ctx context.Context, path, nodeXML string) error {
	tx, err := templateXML(nodeXML, s.Template.Name, s.Template.Metadata, s.Template.Log)
	if err != nil {
		return err
	}
	if err := s.stopTemplate(ctx); err != nil {
		return err
	}
	// Its console log stays when it fails: the error names it.
	_ = os.Remove(s.Template.Log)
	created := time.Now()
	if err := s.HV.CreateDomain(ctx, tx); err != nil {
		return err
	}
	ready, tail, declined, err := s.waitReady(ctx)
	if err == nil && ready {
		err = checkClock(tail, time.Since(created))
	}
	if err != nil || !ready {
		_ = s.stopTemplate(context.WithoutCancel(ctx))
		if declined != "" {
			err = errors.New("the probe kernel cannot make saved starts: " + declined)
			_ = os.WriteFile(path+".none", []byte(err.Error()+"\n"), 0o644)
		}
		if err == nil {
			err = fmt.Errorf("the template's agent did not write %q within %s (its console: %s)", wire.SavedStartReady, s.readyTimeout(), s.Template.Log)
		}
		return err
	}
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	if err := s.HV.SaveDomain(ctx, s.Template.Name, tmp); err != nil {
		_ = s.stopTemplate(context.WithoutCancel(ctx))
		return err
	}
	if err := checkImage(tmp); err != nil {
		os.Remove(tmp)
		if !errors.Is(err, fs.ErrPermission) {
			_ = os.WriteFile(path+".none", []byte("libvirt wrote a save image bootlab cannot rewrite: "+err.Error()+"\n"), 0o644)
		}
		return err
	}
	os.Remove(s.Template.Log)
	return os.Rename(tmp, path)
}

// checkClock refuses a template whose clock ran fast: its kernel counted
// more uptime (readyTail: " (uptime 1.93 s)") than elapsed here since
// its domain was created, by more than a quarter. Under TCG the kernel
// calibrates its TSC at boot, and a loaded host can make it wrong (seen
// once: 2.8 times as fast); a save would give every node restored from
// it that clock. (One that ran slow shows nothing here: the kernel starts
// after the domain.)
func checkClock(readyTail string, elapsed time.Duration) error {
	var up float64
	if _, err := fmt.Sscanf(strings.TrimSpace(readyTail), "(uptime %g s)", &up); err != nil {
		return fmt.Errorf("the template's ready line %q has no uptime (an agent older than this bootlab?)", strings.TrimSpace(readyTail))
	}
	if uptime := time.Duration(up * float64(time.Second)); uptime > elapsed*5/4+200*time.Millisecond {
		return fmt.Errorf("the template's kernel counted %s of uptime in %s: its clock runs fast (a TSC calibrated wrongly at boot on a loaded host); not saved, its nodes boot (the next lab up tries again)", uptime.Round(10*time.Millisecond), elapsed.Round(10*time.Millisecond))
	}
	return nil
}

// waitReady polls the template's console for its agent's ready line
// (tail: what follows it on its line, the uptime) or declined line
// (declined: why). make stops a declined template and remembers why: that
// image's nodes boot from then on.
func (s *Starter) waitReady(ctx context.Context) (ready bool, tail, declined string, err error) {
	deadline := time.Now().Add(s.readyTimeout())
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(s.Template.Log)
		if rest, ok := lineAfter(data, wire.SavedStartReady); ok {
			return true, rest, "", nil
		}
		if why, ok := lineAfter(data, wire.SavedStartDeclined); ok {
			return false, "", strings.TrimSpace(why), nil
		}
		if why, ok := lineAfter(data, "Kernel panic - "); ok {
			return false, "", "", fmt.Errorf("the template's kernel panicked: %s (its console: %s)", strings.TrimSpace(why), s.Template.Log)
		}
		if !timing.Sleep(ctx, 50*time.Millisecond) {
			return false, "", "", ctx.Err()
		}
	}
	return false, "", "", nil
}

// lineAfter is what follows marker on its line in data, if marker is there.
func lineAfter(data []byte, marker string) (string, bool) {
	_, rest, ok := bytes.Cut(data, []byte(marker))
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	return string(line), ok
}

func (s *Starter) readyTimeout() time.Duration {
	if s.ReadyTimeout > 0 {
		return s.ReadyTimeout
	}
	return 30 * time.Second
}

// stopTemplate stops a template domain of this lab, if one runs.
func (s *Starter) stopTemplate(ctx context.Context) error {
	o, err := s.HV.LookupDomain(ctx, s.Template.Name)
	if errors.Is(err, hypervisor.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.Template.Owns(o); err != nil {
		return err
	}
	if err := s.HV.DestroyDomain(ctx, s.Template.Name); err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
		return err
	}
	return nil
}

// checkImage reads the header of the save image at path.
func checkImage(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = readHeader(f)
	return err
}

// emulatorID names the QEMU binary of a definition by path, size and
// modification time: an upgraded QEMU makes new images.
func emulatorID(nodeXML string) string {
	var d libvirtxml.Domain
	if d.Unmarshal(nodeXML) != nil || d.Devices == nil {
		return ""
	}
	fi, err := os.Stat(d.Devices.Emulator)
	if err != nil {
		return d.Devices.Emulator
	}
	return fmt.Sprintf("%s %d %d", d.Devices.Emulator, fi.Size(), fi.ModTime().UnixNano())
}

// sweep removes the pipes an interrupted up left (cache.RestorePipeStale
// old: a pipe in use lives a second).
func sweep(dir string, now time.Time) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".restore-") {
			continue
		}
		if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > cache.RestorePipeStale {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// lockFile takes an exclusive flock on path, waiting until ctx is done.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !timing.Sleep(ctx, 50*time.Millisecond) {
			f.Close()
			return nil, ctx.Err()
		}
	}
}
