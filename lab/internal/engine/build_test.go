package engine

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/preflight"
)

// kvmFake is the shared fake hypervisor on a host whose libvirt offers KVM.
type kvmFake struct{ *fake.Hypervisor }

func (kvmFake) DomainTypes(context.Context) ([]string, error) { return []string{"qemu", "kvm"}, nil }

// buildHost is a host where every preflight check passes and KVM works;
// smoked records each test guest booted to prove it.
type buildHost struct{ smoked []string }

func (b *buildHost) facts() preflight.HostFacts {
	return preflight.HostFacts{
		DevKVM: "/dev/kvm",
		Getenv: func(string) string { return "" },
		Stat: func(p string) (*preflight.FileOwner, error) {
			if p == "/dev/kvm" {
				return &preflight.FileOwner{Mode: fs.ModeCharDevice | 0o666}, nil
			}
			fi, err := os.Stat(p)
			if err != nil {
				return nil, err
			}
			return &preflight.FileOwner{Mode: fi.Mode()}, nil
		},
		LookPath: func(name string) (string, error) { return "/usr/bin/" + name, nil },
		LookupUser: func(string) (*preflight.HostUser, error) {
			return &preflight.HostUser{Name: "libvirt-qemu", UID: 0}, nil
		},
		FreeBytes:    func(string) (uint64, error) { return 500 << 30, nil },
		Routes:       func() ([]preflight.HostRoute, error) { return nil, nil },
		Listeners:    func() ([]netip.AddrPort, error) { return nil, nil },
		HAProxyCheck: func(context.Context, string, string) error { return nil },
		KVMSmoke: func(_ context.Context, kernel string) error {
			b.smoked = append(b.smoked, kernel)
			return nil
		},
	}
}

// lab up is one call: the inputs, preflight (which proves KVM with one test
// guest and so chooses the accelerator, once), the key, the boot files and
// the lab, with the spec given left as it was.
func TestBuildChoosesTheAcceleratorOnce(t *testing.T) {
	t.Parallel()
	s := bootSpec(t)
	s.Profile = spec.ProfileProbe
	// A new lab: its directory is empty until Build claims it (the probe
	// preparer writes the Ignition bootSpec made for Up's tests).
	require.NoError(t, os.RemoveAll(s.LabDir))
	before := *s
	hv := fake.New()
	haproxy := newHAProxyMachine(t, hv)
	host := &buildHost{}
	var out bytes.Buffer
	res, err := Build(context.Background(), s, BuildOptions{
		Log: slog.New(slog.DiscardHandler), Status: status.New(&out, false),
		Connect:   hypervisor.Shared(kvmFake{hv}),
		Preflight: preflight.Options{Facts: host.facts()},
	})
	require.NoError(t, err, out.String())
	assert.Equal(t, []string{s.Image.Kernel}, host.smoked, "one test guest, the lab's own kernel")
	assert.Equal(t, spec.AccelKVM, res.Accelerator)
	assert.Contains(t, out.String(), "accelerator: kvm")
	assert.Equal(t, 1, strings.Count(out.String(), "accelerator:"), "decided and said once: %s", out.String())
	for _, n := range s.Nodes {
		assert.Contains(t, hv.DomainObjects[s.DomainName(n)].XML, `type="kvm"`, n.Name)
	}
	assert.Len(t, haproxy.startArgs(), 1, "the load balancer started")
	st, err := labdir.LoadState(s.LabDir)
	require.NoError(t, err)
	assert.Equal(t, spec.AccelKVM, st.Accelerator)
	assert.Equal(t, before.Image, s.Image, "Build leaves the spec given as it was")
	_, err = os.Stat(labdir.SSHKey(s))
	assert.NoError(t, err, "the lab key was made")

	// Built again with the accelerator given (as class up does): no test
	// guest at all, and nothing to change.
	host.smoked = nil
	res, err = Build(context.Background(), s, BuildOptions{
		Accelerator: spec.AccelKVM, Status: status.New(&out, false),
		Connect: hypervisor.Shared(kvmFake{hv}),
	})
	require.NoError(t, err)
	assert.Empty(t, host.smoked)
	assert.False(t, res.Up.Changed)

	// Without preflight the accelerator is chosen once the boot files
	// exist: one test guest again, never two.
	res, err = Build(context.Background(), s, BuildOptions{
		NoPreflight: true, Status: status.New(&out, false),
		Connect:   hypervisor.Shared(kvmFake{hv}),
		Preflight: preflight.Options{Facts: host.facts()},
	})
	require.NoError(t, err)
	assert.Equal(t, []string{s.Image.Kernel}, host.smoked)
	assert.Equal(t, spec.AccelKVM, res.Accelerator)
}

// A failed preflight stops Build before anything is made: no key, no
// Ignition, no libvirt object.
func TestBuildStopsAtPreflight(t *testing.T) {
	t.Parallel()
	s := bootSpec(t)
	s.Profile = spec.ProfileProbe
	require.NoError(t, os.RemoveAll(filepath.Join(s.LabDir, "ignition")))
	hv := fake.New()
	host := &buildHost{}
	facts := host.facts()
	facts.FreeBytes = func(string) (uint64, error) { return 1 << 20, nil }
	_, err := Build(context.Background(), s, BuildOptions{
		Connect:   hypervisor.Shared(kvmFake{hv}),
		Preflight: preflight.Options{Facts: facts},
	})
	var pe *preflight.Error
	require.True(t, errors.As(err, &pe), "a preflight error: %v", err)
	assert.Empty(t, hv.Mutations(), "no libvirt object")
	_, err = os.Stat(labdir.SSHKey(s))
	assert.ErrorIs(t, err, fs.ErrNotExist, "no lab key")
}

// `lab up --dry-run` plans and boots nothing: preflight's KVM proof is
// left to the real up, which the plan's accelerator line says, and no
// libvirt object or lab file is made.
func TestPlanBuildBootsNoTestGuest(t *testing.T) {
	t.Parallel()
	s := bootSpec(t)
	s.Profile = spec.ProfileProbe
	require.NoError(t, os.RemoveAll(s.LabDir))
	hv := fake.New()
	newHAProxyMachine(t, hv)
	host := &buildHost{}
	plan, err := PlanBuild(context.Background(), s, BuildOptions{
		Connect:   hypervisor.Shared(kvmFake{hv}),
		Preflight: preflight.Options{Facts: host.facts()},
	})
	require.NoError(t, err)
	assert.Empty(t, host.smoked, "no test guest booted")
	assert.Equal(t, spec.AccelKVM, plan.Accelerator)
	assert.Equal(t, "kvm planned (accelerator: auto: KVM looks usable; the real up proves it with a test guest first and takes tcg if that does not boot; a dry run boots none)", plan.AcceleratorReason)
	assert.Empty(t, hv.Mutations())
	assert.NoDirExists(t, s.LabDir)
	assert.NotEmpty(t, plan.Changes)
}
