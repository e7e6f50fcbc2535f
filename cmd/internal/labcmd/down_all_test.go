package labcmd

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/labdir"
)

// `lab down --all` asks first (refuses without a terminal unless --yes) and
// then deletes every lab on the host, each as its own `lab down` would, on
// the Factory's hypervisor (the shared fake, as libvirt's test driver).
func TestDownAllConfirmsThenDeletesEveryLab(t *testing.T) {
	home := isolatedHost(t)
	hv := fake.New()
	hv.Caps = hypervisor.Capabilities{}
	for _, name := range []string{"da1", "da2"} {
		s := &spec.Spec{Name: name, Libvirt: spec.Libvirt{URI: "test:///default"}}
		s.Defaults()
		require.NoError(t, (&labdir.State{Name: name, UUID: "u-" + name, Spec: s}).Save(s.LabDir))
	}
	exec := func(in string, tty bool, args ...string) (string, error) {
		var errOut bytes.Buffer
		f := &cmdutil.Factory{Streams: cmdutil.Streams{In: strings.NewReader(in), Out: &bytes.Buffer{}, ErrOut: &errOut, InTTY: tty}, Status: status.New(&errOut, false)}
		f.Log, f.Connect = slog.New(slog.DiscardHandler), hypervisor.Shared(hv)
		cmd := NewCmdDown(f, nil)
		cmd.SetArgs(args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.Execute()
		return errOut.String(), err
	}
	_, err := exec("", false, "--all")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "would delete 2 labs (da1, da2): pass --yes")
	_, err = exec("n\n", true, "--all")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nothing deleted")
	_, err = exec("", false, "--all", "--name", "da1")
	assert.ErrorContains(t, err, "takes no --name")
	for _, name := range []string{"da1", "da2"} {
		assert.DirExists(t, filepath.Join(home, "labs", name), "nothing is deleted before the user agrees")
	}

	errOut, err := exec("y\n", true, "--all")
	require.NoError(t, err, errOut)
	assert.Contains(t, errOut, "Delete 2 labs: da1, da2? [y/N]")
	for _, name := range []string{"da1", "da2"} {
		_, statErr := os.Stat(filepath.Join(home, "labs", name, "state.json"))
		assert.True(t, os.IsNotExist(statErr), "%s's lab files are gone", name)
	}
	errOut, err = exec("", false, "--all", "--yes")
	require.NoError(t, err)
	assert.Contains(t, errOut, "nothing to delete: no labs")
}
