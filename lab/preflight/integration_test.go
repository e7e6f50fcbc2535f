//go:build integration

package preflight

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/spec"
)

// testKernel is a bootable x86_64 kernel: $BOOTLAB_TEST_KERNEL, the host's,
// or the Debian cloud kernel the probe image cache holds (as root,
// /var/cache/bootlab; `bootlab lab probe-image build` fetches it).
func testKernel(t *testing.T) string {
	t.Helper()
	if k := os.Getenv("BOOTLAB_TEST_KERNEL"); k != "" {
		return k
	}
	if k := hostKernel("/boot"); k != "" {
		return k
	}
	for _, cache := range []string{os.Getenv("XDG_CACHE_HOME") + "/bootlab", "/var/cache/bootlab"} {
		if k := hostKernel(filepath.Join(cache, "debian", "root", "boot")); k != "" {
			return k
		}
	}
	t.Fatal("no kernel for the accelerator smoke test: run `make probe-image` (fetches Debian's " +
		"linux-image-cloud-amd64 into /var/cache/bootlab) or set BOOTLAB_TEST_KERNEL to a vmlinuz")
	return ""
}

// The smoke test's detection is real: a kernel under TCG prints its banner
// and is seen; a file that is no kernel is not. (Under KVM the same code
// runs; whether KVM works depends on the host, so it is not asserted.)
func TestBootPrints(t *testing.T) {
	kernel := testKernel(t)
	require.NoError(t, bootPrints(context.Background(), "tcg", kernel, 60*time.Second), "a kernel under TCG prints its banner")

	junk := filepath.Join(t.TempDir(), "junk")
	require.NoError(t, os.WriteFile(junk, make([]byte, 4096), 0o644))
	err := bootPrints(context.Background(), "tcg", junk, 3*time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kernel output on the serial console")
}

// ChooseAccelerator on the real host answers, and its answer is consistent
// with the smoke test run directly.
func TestChooseAcceleratorOnThisHost(t *testing.T) {
	s := &spec.Spec{Name: "pf-it"}
	s.Image.Kernel = testKernel(t)
	s.Defaults()
	t.Setenv("BOOTLAB_ACCEL", "")
	accel, reason, err := ChooseAccelerator(context.Background(), s, nil, HostFacts{}, nil)
	require.NoError(t, err)
	t.Logf("chose %s: %s", accel, reason)
	if accel == spec.AccelKVM {
		assert.NoError(t, kvmSmoke(context.Background(), s.Image.Kernel))
	} else {
		assert.Contains(t, reason, "tcg: ")
	}
}
