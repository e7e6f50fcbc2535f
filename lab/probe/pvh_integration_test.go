//go:build integration

package probe

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The probe image's real kernel (Debian's, built by `make test-kernel`):
// its PVH kernel loads what the kernel itself loads, and QEMU under TCG,
// with its default firmware as the probe domains have it, boots it with
// the image's initramfs to the agent's first console report.
func TestPVHKernelOfTheProbeImageBoots(t *testing.T) {
	t.Parallel()
	bz := CachedKernel(DefaultCacheDir())
	require.NotEmpty(t, bz, "no probe image in %s: sudo make test-kernel (bootlab lab probe-image build)", DefaultCacheDir())
	qemu, err := exec.LookPath("qemu-system-x86_64")
	require.NoError(t, err, "apt-get install -y qemu-system-x86")

	kdata, err := os.ReadFile(bz)
	require.NoError(t, err)
	ctx := context.Background()
	pvh, err := PVHKernel(ctx, kdata)
	require.NoError(t, err, "Debian's cloud kernel is built with CONFIG_PVH")
	payload, err := bzPayload(kdata)
	require.NoError(t, err)
	vmlinux, err := decompressKernel(ctx, payload)
	require.NoError(t, err)
	assert.Equal(t, memoryImage(t, vmlinux), memoryImage(t, pvh))
	assert.Less(t, len(pvh), len(vmlinux)*3/4, "the zero runs are left to the loader")

	dir := t.TempDir()
	kernel := filepath.Join(dir, PVHKernelFile)
	require.NoError(t, os.WriteFile(kernel, pvh, 0o644))
	boot, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(boot, qemu, "-machine", "q35,accel=tcg", "-m", "256", "-nodefaults", "-no-user-config",
		"-display", "none", "-kernel", kernel, "-initrd", filepath.Join(filepath.Dir(bz), "initramfs.img"),
		"-append", Cmdline, "-serial", "stdio", "-device", "virtio-rng-pci")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var seen []string
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "BOOTLAB-PROBE-REPORT ") {
			return
		}
		seen = append(seen, line)
	}
	t.Fatalf("the PVH kernel never reached the agent (qemu: %v, %s); console:\n%s", sc.Err(), stderr.String(), strings.Join(seen, "\n"))
}
