package verify

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// fileHost is a remote machine that holds files and nothing else.
type fileHost struct {
	files map[string][]byte
	read  []string
}

func (h *fileHost) Name() string { return "root@classroom:22" }
func (h *fileHost) Remote() bool { return true }
func (h *fileHost) Close() error { return nil }
func (h *fileHost) Run(context.Context, string, io.Reader, io.Writer, io.Writer) (int, error) {
	return 127, nil
}
func (h *fileHost) WriteFile(context.Context, string, []byte, fs.FileMode) error {
	return errors.New("read-only")
}
func (h *fileHost) Dial(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("no network")
}
func (h *fileHost) ReadFile(_ context.Context, p string) ([]byte, error) {
	h.read = append(h.read, p)
	if b, ok := h.files[p]; ok {
		return b, nil
	}
	return nil, &fs.PathError{Op: "read", Path: p, Err: fs.ErrNotExist}
}

var _ host.Host = (*fileHost)(nil)

// A remote lab's console logs are read on the hypervisor's machine, at
// the paths under libvirt.hostDir, never on this one.
func TestNodeChecksReadConsolesThroughTheHost(t *testing.T) {
	t.Parallel()
	s := &spec.Spec{Name: "rv", Profile: spec.ProfileProbe, LabDir: t.TempDir(), Topology: spec.Topology{Masters: 1},
		Libvirt: spec.Libvirt{URI: "qemu+ssh://root@classroom/system"}}
	s.Defaults()
	boot, _ := s.Node("bootstrap")
	rep := &wire.Report{Node: "bootstrap", MAC: boot.MAC, Seq: 1, Boot: time.Now().UTC(), Checks: []wire.Check{{Name: "dhcp", OK: true, Detail: "lease"}}}
	h := &fileHost{files: map[string][]byte{labdir.ConsoleLog(s, boot): rep.Line()}}
	reports := map[string]*wire.Report{}
	checks := nodeChecks(context.Background(), s, false, reports, Options{Host: h})
	assert.Contains(t, reports, "bootstrap")
	assert.Equal(t, "/var/lib/bootlab/labs/rv/console/bootstrap.log", labdir.ConsoleLog(s, boot))
	assert.Contains(t, h.read, labdir.ConsoleLog(s, boot))
	var sawMissing bool
	for _, c := range checks {
		if c.Group == "master-0" && c.Name == "report" {
			sawMissing = true
			assert.Contains(t, c.Detail, "no probe report in /var/lib/bootlab/labs/rv/console/master-0.log")
		}
	}
	assert.True(t, sawMissing)
}
