package engine

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
)

// someonesDir fills dir with what a user might keep there, under the very
// names bootlab gives its own lab files.
func someonesDir(t *testing.T, dir string) {
	t.Helper()
	for _, p := range []string{"ssh/sshd_config", "pki/ca.crt", "haproxy/haproxy.cfg", "mydata/notes.txt", "state.txt"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte("keep "+p), 0o644))
	}
}

// The report: `lab down` of a spec whose labDir names an existing
// directory removed ssh/, pki/ and haproxy/ from it. A lab never built
// there has nothing to remove, and nothing is written either (no lock).
func TestDownOfANeverBuiltLabTouchesNothing(t *testing.T) {
	t.Parallel()
	s := testSpec(t, "probe1", false)
	someonesDir(t, s.LabDir)
	before := testutil.Tree(t, s.LabDir)
	hv := fake.New()

	steps, err := Down(context.Background(), hv, s, DownOptions{})
	require.NoError(t, err)
	for _, st := range steps {
		assert.False(t, st.Changed, "step %q changed %q", st.Name, st.Detail)
	}
	assert.Equal(t, before, testutil.Tree(t, s.LabDir))
	assert.Empty(t, hv.Mutations())
}

// up refuses a lab directory that holds files and no state of this lab,
// before anything is made: no key, no state, no libvirt object.
func TestBuildRefusesADirectoryHoldingSomeoneElsesFiles(t *testing.T) {
	t.Parallel()
	s := bootSpec(t)
	s.Profile = spec.ProfileProbe
	require.NoError(t, os.RemoveAll(s.LabDir))
	someonesDir(t, s.LabDir)
	before := testutil.Tree(t, s.LabDir)
	hv := fake.New()

	_, err := Build(context.Background(), s, buildOpts(hv))
	var notOurs *labdir.NotOursError
	require.ErrorAs(t, err, &notOurs)
	assert.Equal(t, "labDir", notOurs.Field)
	assert.Contains(t, err.Error(), "haproxy, mydata, pki, ssh, state.txt")
	assert.Contains(t, err.Error(), "point labDir at a new directory")
	assert.Equal(t, before, testutil.Tree(t, s.LabDir))
	assert.Empty(t, hv.Mutations())
}

// The pool directory is checked on the hypervisor's machine before
// anything is made, and a remote lab's host directory too.
func TestBuildRefusesHostDirectoriesHoldingOtherFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, field string
		remote      bool
		dir         func(s *spec.Spec) string
	}{
		{"pool directory", "storage.poolDir", false, func(s *spec.Spec) string { return s.Storage.PoolDir }},
		{"remote host directory", "libvirt.hostDir", true, func(s *spec.Spec) string { return labdir.HostDir(s) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := bootSpec(t)
			s.Profile = spec.ProfileProbe
			require.NoError(t, os.RemoveAll(s.LabDir))
			hv := fake.New()
			if tc.remote {
				hv.Machine = fake.NewMachine(true)
				s.Libvirt.URI = "qemu+ssh://root@hypervisor/system"
				s.Libvirt.HostDir = "/srv/bootlab/" + s.Name
			}
			hv.Machine.Files[tc.dir(s)+"/images/disk.img"] = []byte("someone's")

			_, err := Build(context.Background(), s, buildOpts(hv))
			var notOurs *labdir.NotOursError
			require.ErrorAs(t, err, &notOurs)
			assert.Equal(t, tc.field, notOurs.Field)
			assert.Equal(t, []string{"images"}, notOurs.Files)
			_, serr := os.Stat(labdir.StatePath(s.LabDir))
			assert.True(t, errors.Is(serr, fs.ErrNotExist), "no lab state may be written")
			assert.Empty(t, hv.Mutations())
		})
	}
}

// A pool directory holds files bootlab did not make (put there after the
// lab was built): down deletes the lab's volumes, leaves that file, and
// leaves the directory.
func TestDownDeletesOnlyTheVolumesBootlabMade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	s := testSpec(t, "t", true)
	require.NoError(t, claimLabDir(s, ""))
	_, err := Up(ctx, hv, s, upOpts())
	require.NoError(t, err)
	_, err = hv.CreateVolume(ctx, s.PoolName(), `<volume><name>family-photos.img</name><capacity>1</capacity></volume>`)
	require.NoError(t, err)
	hv.Reset()

	steps, err := Down(ctx, hv, s, DownOptions{})
	require.NoError(t, err)
	vols, err := hv.Volumes(ctx, s.PoolName())
	require.NoError(t, err, "the pool stays defined? no: listed before it goes")
	var left []string
	for _, v := range vols {
		left = append(left, v.Name)
	}
	sort.Strings(left)
	assert.Equal(t, []string{"family-photos.img"}, left)
	assert.Zero(t, countPrefix(hv.Mutations(), "DeletePool"), "the pool's directory holds someone's file: it stays")
	assert.Contains(t, stepDetail(steps, "Deleting storage pool"), "kept: it holds 1 files bootlab did not make")
}

// A remote lab's host directory goes at down only with this lab's marker.
func TestDownRemovesARemoteHostDirOnlyWithItsMarker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, marked := range []bool{true, false} {
		hv := fake.New()
		hv.Machine = fake.NewMachine(true)
		hv.Machine.Respond = func(cmd string, stdout io.Writer) int {
			switch {
			case strings.HasPrefix(cmd, "ls -A"):
				return 2 // the host directory does not exist yet
			case strings.HasPrefix(cmd, "test -d"):
				_, _ = io.WriteString(stdout, "absent\n")
			}
			return 0
		}
		s := testSpec(t, "r", false)
		s.Libvirt.URI = "qemu+ssh://root@hypervisor/system"
		s.Libvirt.HostDir = "/srv/bootlab/r"
		require.NoError(t, claimLabDir(s, ""))
		_, err := Up(ctx, hv, s, upOpts())
		require.NoError(t, err)
		marker := s.Libvirt.HostDir + "/" + hostMarker
		st, err := labdir.LoadState(s.LabDir)
		require.NoError(t, err)
		require.Equal(t, "r "+st.UUID+"\n", string(hv.Machine.Files[marker]), "up marks the host directory it made")
		if !marked {
			delete(hv.Machine.Files, marker)
		}
		hv.Machine.Commands = nil

		_, err = Down(ctx, hv, s, DownOptions{})
		require.NoError(t, err)
		removed := false
		for _, c := range hv.Machine.Commands {
			if strings.Contains(c, "rm -rf") && strings.Contains(c, s.Libvirt.HostDir) {
				removed = true
			}
		}
		assert.Equal(t, marked, removed, "marker present: %v; commands %q", marked, hv.Machine.Commands)
	}
}

// buildOpts builds on hv without preflight, with TCG chosen.
func buildOpts(hv hypervisor.Hypervisor) BuildOptions {
	return BuildOptions{
		Log: slog.New(slog.DiscardHandler), Status: status.New(io.Discard, false), NoPreflight: true, Accelerator: spec.AccelTCG,
		Connect: hypervisor.Shared(hv),
	}
}

func stepDetail(steps []StepResult, prefix string) string {
	for _, st := range steps {
		if strings.HasPrefix(st.Name, prefix) {
			return st.Detail
		}
	}
	return ""
}
