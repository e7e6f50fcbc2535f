package classcmd

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
)

// run executes a class subcommand against the real libvirtd's test:///default
// driver and returns stdout, stderr and the error.
func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return runOn(t, nil, args...)
}

// runOn is run with every hypervisor the command opens being hv (the
// shared fake); a nil hv is the real libvirtd.
func runOn(t *testing.T, hv *fake.Hypervisor, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := &cmdutil.Factory{Streams: cmdutil.Streams{Out: &out, ErrOut: &errOut}, Status: status.New(&errOut, false), Log: slog.New(slog.DiscardHandler)}
	if hv != nil {
		f.Connect = hypervisor.Shared(hv)
	}
	cmd := NewCmdClass(f)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// classFile writes a class of two probe labs on test:///default with boot
// files of their own (no probe image is built) and returns its path.
func classFile(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"vmlinuz", "initrd"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644))
	}
	spec := `name: it
template:
  profile: probe
  accelerator: tcg
  libvirt: {uri: "test:///default"}
  image: {kernel: ` + filepath.Join(dir, "vmlinuz") + `, initrd: ` + filepath.Join(dir, "initrd") + `}
  topology: {masters: 1, workers: 0}
learners: [ann, ben]
addressPool: 10.231.0.0/22
` + extra
	p := filepath.Join(dir, "class.yaml")
	require.NoError(t, os.WriteFile(p, []byte(spec), 0o644))
	return p
}

// fakeTestDriver is the shared fake playing libvirt's test driver (the
// classFile's test:///default): no guests run, so no load balancer starts.
func fakeTestDriver() *fake.Hypervisor {
	hv := fake.New()
	hv.Caps = hypervisor.Capabilities{}
	return hv
}
