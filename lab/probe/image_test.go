package probe

import (
	"bytes"
	"compress/gzip"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFindModules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(rel string, data []byte) {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte("fw_cfg module"))
	require.NoError(t, zw.Close())
	builtin := map[string]bool{"virtio_net": true, "ext4": true}
	for _, m := range Modules {
		if !builtin[m] && m != "qemu_fw_cfg" {
			write(filepath.Join("kernel", "drivers", strings.ReplaceAll(m, "_", "-")+".ko"), []byte(m))
		}
	}
	write("kernel/drivers/firmware/qemu_fw_cfg.ko.gz", gz.Bytes())
	write("modules.builtin", []byte("kernel/drivers/net/virtio_net.ko\nkernel/fs/ext4/ext4.ko\n"))

	mods, err := findModules(dir)
	require.NoError(t, err)
	require.Len(t, mods, len(Modules))
	byName := map[string]module{}
	for i, m := range mods {
		assert.Equal(t, Modules[i], m.name, "load order kept")
		byName[m.name] = m
	}
	assert.Empty(t, byName["virtio_net"].path, "virtio_net is built in")
	assert.Empty(t, byName["ext4"].path, "ext4 is built in")
	assert.NotEmpty(t, byName["virtio_blk"].path, "the disk driver of the Kubernetes volume is a module")
	data, err := readModule(context.Background(), byName["qemu_fw_cfg"].path)
	require.NoError(t, err)
	assert.Equal(t, "fw_cfg module", string(data), "gzip modules are decompressed")

	require.NoError(t, os.Remove(filepath.Join(dir, "modules.builtin")))
	_, err = findModules(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "virtio_net")
	assert.Contains(t, err.Error(), "--kernel/--modules")
}

func TestEnsureImageCachesByContent(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/qemu-img"); err != nil {
		t.Fatalf("qemu-img is needed: apt-get install -y qemu-utils")
	}
	dir := t.TempDir()
	mods := filepath.Join(dir, "modules")
	require.NoError(t, os.MkdirAll(mods, 0o755))
	for _, m := range Modules {
		require.NoError(t, os.WriteFile(filepath.Join(mods, m+".ko"), []byte(m), 0o644))
	}
	kernel := filepath.Join(dir, "vmlinuz")
	require.NoError(t, os.WriteFile(kernel, []byte("kernel"), 0o600))
	agent := filepath.Join(dir, "agent")
	data := buildAgent(t)
	require.NoError(t, os.WriteFile(agent, data, 0o755))

	opts := ImageOptions{CacheDir: filepath.Join(dir, "cache"), Kernel: kernel, ModulesDir: mods, Agent: agent}
	img, err := EnsureImage(context.Background(), opts)
	require.NoError(t, err)
	assert.True(t, img.Built)
	for _, p := range []string{img.Kernel, img.Initrd, img.BaseDisk} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), "qemu must read %s", p)
	}
	again, err := EnsureImage(context.Background(), opts)
	require.NoError(t, err)
	assert.False(t, again.Built, "same inputs: cached")
	assert.Equal(t, img.Initrd, again.Initrd)

	require.NoError(t, os.WriteFile(kernel, []byte("kernel v2"), 0o600))
	changed, err := EnsureImage(context.Background(), opts)
	require.NoError(t, err)
	assert.True(t, changed.Built, "a new kernel rebuilds")
	assert.NotEqual(t, img.Hash, changed.Hash)
}

func TestDefaultCacheDirHonoursBootlabCache(t *testing.T) {
	// Not parallel: t.Setenv (BOOTLAB_CACHE, XDG_CACHE_HOME) changes the whole process's environment.
	// The probe image and the RHCOS/client downloads share one cache root.
	dir := t.TempDir()
	t.Setenv("BOOTLAB_CACHE", dir)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	require.Equal(t, dir, DefaultCacheDir())
}

// An imported cache holds the kernel package apt-get downloaded on the
// trainer's host: the builder unpacks it and never calls apt-get.
func TestDebianKernelFromTheCacheWithoutAptGet(t *testing.T) {
	// Not parallel: t.Setenv (PATH) changes the whole process's environment.
	dpkgDeb, err := exec.LookPath("dpkg-deb")
	require.NoError(t, err, "apt-get install -y dpkg")
	tree := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "DEBIAN"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tree, "DEBIAN", "control"), []byte(
		"Package: linux-image-6.1.0-99-cloud-amd64\nVersion: 6.1.999-1\nArchitecture: amd64\nMaintainer: test <t@example.org>\nDescription: test kernel\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "boot"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tree, "boot", "vmlinuz-6.1.0-99-cloud-amd64"), []byte("kernel"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "lib", "modules", "6.1.0-99-cloud-amd64", "kernel"), 0o755))

	dir := filepath.Join(t.TempDir(), "debian")
	dl := filepath.Join(dir, "download")
	require.NoError(t, os.MkdirAll(dl, 0o755))
	deb := filepath.Join(dl, "linux-image-6.1.0-99-cloud-amd64_6.1.999-1_amd64.deb")
	out, err := exec.Command(dpkgDeb, "--root-owner-group", "--build", tree, deb).CombinedOutput()
	require.NoError(t, err, "%s", out)
	// The metapackage beside it is not a kernel.
	require.NoError(t, os.WriteFile(filepath.Join(dl, DebianKernelPackage+"_6.1.999-1_amd64.deb"), []byte("not unpacked"), 0o644))

	bin := t.TempDir()
	marker := filepath.Join(t.TempDir(), "apt-get-ran")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "apt-get"), []byte("#!/bin/sh\ntouch "+marker+"\nexit 1\n"), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	k, m, source, err := debianKernel(context.Background(), dir, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "root", "boot", "vmlinuz-6.1.0-99-cloud-amd64"), k)
	assert.Equal(t, filepath.Join(dir, "root", "lib", "modules", "6.1.0-99-cloud-amd64"), m)
	assert.Equal(t, "debian 6.1.0-99-cloud-amd64", source)
	assert.NoFileExists(t, marker, "apt-get is not run when the cache has the package")
}

// Two builders writing the same cached file at once (two labs coming up,
// the e2e's two go tests) both succeed, and the file is whole.
func TestWriteAtomicConcurrently(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "initramfs.img")
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<14)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = writeAtomic(path, data)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, data, got)
	left, _ := filepath.Glob(path + ".*")
	assert.Empty(t, left, "no temporary file left behind")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
}
