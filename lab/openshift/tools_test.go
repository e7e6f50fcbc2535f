package openshift

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func noPath(string) (string, error) { return "", errors.New("not on PATH") }

func TestEnsureToolsDownloadsVerifiesAndCaches(t *testing.T) {
	t.Parallel()
	m := newTestMirror(t, "4.19.10")
	cache := t.TempDir()
	o := ToolsOptions{Version: "4.19.10", Mirror: m.clients(), CacheDir: cache, LookPath: noPath}
	tools, err := EnsureTools(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(cache, "clients", "4.19.10", "openshift-install"), tools.Installer)
	assert.Equal(t, filepath.Join(cache, "clients", "4.19.10", "oc"), tools.OC)
	assert.Equal(t, "download", tools.InstallerFrom)
	assert.Equal(t, "download", tools.OCFrom)
	fi, err := os.Stat(tools.Installer)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	assert.NoFileExists(t, filepath.Join(cache, "clients", "4.19.10", "openshift-install-linux.tar.gz"), "the tarball is removed once extracted")
	assert.Equal(t, 1, count(m.requests(), "sha256sum.txt"), "one sha256sum.txt serves both tarballs")

	n := len(m.requests())
	tools, err = EnsureTools(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, "cache", tools.InstallerFrom)
	assert.Equal(t, "cache", tools.OCFrom)
	assert.Len(t, m.requests(), n, "a cache hit downloads nothing")
}

func count(paths []string, suffix string) int {
	n := 0
	for _, p := range paths {
		if strings.HasSuffix(p, suffix) {
			n++
		}
	}
	return n
}

func TestEnsureToolsCorruptTarballNeverCached(t *testing.T) {
	t.Parallel()
	m := newTestMirror(t, "4.19.10")
	for p, b := range m.files {
		if strings.HasSuffix(p, "openshift-install-linux.tar.gz") {
			bad := append([]byte(nil), b...)
			bad[len(bad)-10] ^= 0xff
			m.files[p] = bad
		}
	}
	cache := t.TempDir()
	_, err := EnsureTools(context.Background(), ToolsOptions{Version: "4.19.10", Mirror: m.clients(), CacheDir: cache, LookPath: noPath})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sha256")
	entries, _ := os.ReadDir(filepath.Join(cache, "clients", "4.19.10"))
	assert.Empty(t, entries, "nothing unverified stays in the cache")
}

func TestEnsureToolsUnknownVersion(t *testing.T) {
	t.Parallel()
	m := newTestMirror(t, "4.19.10")
	_, err := EnsureTools(context.Background(), ToolsOptions{Version: "4.99.0", Mirror: m.clients(), CacheDir: t.TempDir(), LookPath: noPath})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "4.99.0/sha256sum.txt")
	assert.Contains(t, err.Error(), "openshift.mirrors.clients")
}

func TestEnsureToolsGivenPathAndPATH(t *testing.T) {
	// Not parallel: t.Setenv (FAKE_OPENSHIFT_INSTALL_VERSION) changes the whole process's environment.
	fakeInst, _ := filepath.Abs(filepath.Join(testdata, "fake-openshift-install"))
	fakeOC, _ := filepath.Abs(filepath.Join(testdata, "fake-oc"))
	m := newTestMirror(t, "4.19.10")

	tools, err := EnsureTools(context.Background(), ToolsOptions{Version: "4.19.10", InstallerPath: fakeInst, OCPath: fakeOC, CacheDir: t.TempDir(), Mirror: m.clients()})
	require.NoError(t, err)
	assert.Equal(t, fakeInst, tools.Installer)
	assert.Equal(t, "path", tools.InstallerFrom)
	assert.Empty(t, m.requests())

	// A given binary of another version is an error naming the field.
	t.Setenv("FAKE_OPENSHIFT_INSTALL_VERSION", "4.18.1")
	_, err = EnsureTools(context.Background(), ToolsOptions{Version: "4.19.10", InstallerPath: fakeInst, OCPath: fakeOC, CacheDir: t.TempDir(), Mirror: m.clients()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "openshift.installerPath")
	assert.Contains(t, err.Error(), "4.18.1")

	// On PATH with another version: ignored, the right one is downloaded.
	t.Setenv("FAKE_OPENSHIFT_INSTALL_VERSION", "")
	old := filepath.Join(t.TempDir(), "openshift-install")
	require.NoError(t, os.WriteFile(old, []byte("#!/bin/sh\necho 'openshift-install 4.18.1'\n"), 0o755))
	lookPath := func(name string) (string, error) {
		if name == "oc" {
			return fakeOC, nil
		}
		return old, nil
	}
	tools, err = EnsureTools(context.Background(), ToolsOptions{Version: "4.19.10", CacheDir: t.TempDir(), Mirror: m.clients(), LookPath: lookPath})
	require.NoError(t, err)
	assert.Equal(t, "PATH", tools.OCFrom, "oc on PATH is 4.19.10")
	assert.Equal(t, "download", tools.InstallerFrom, "the installer on PATH reports 4.18.1")
}

func TestVersionMatches(t *testing.T) {
	t.Parallel()
	assert.True(t, versionMatches("openshift-install 4.19.10\nbuilt from commit x", "4.19.10"))
	assert.True(t, versionMatches("Client Version: 4.19.10\nKustomize Version: v5", "4.19.10"))
	assert.False(t, versionMatches("openshift-install 4.19.1", "4.19.10"))
	assert.False(t, versionMatches("Client Version: 4.19.100", "4.19.10"))
	assert.False(t, versionMatches("something else 4.19.10", "4.19.10"))
}

func TestFindInstallerAndGather(t *testing.T) {
	// Not parallel: t.Setenv (FAKE_INSTALLER_LOG) changes the whole process's environment.
	fakeInst, _ := filepath.Abs(filepath.Join(testdata, "fake-openshift-install"))
	_, err := FindInstaller(context.Background(), "4.19.10", "", t.TempDir(), noPath)
	assert.ErrorContains(t, err, "bootlab lab up")
	p, err := FindInstaller(context.Background(), "4.19.10", fakeInst, "", nil)
	require.NoError(t, err)
	assert.Equal(t, fakeInst, p)

	log := filepath.Join(t.TempDir(), "calls")
	t.Setenv("FAKE_INSTALLER_LOG", log)
	assets := t.TempDir()
	bundle, err := GatherBootstrap(context.Background(), &Installer{Path: fakeInst}, assets, "192.168.126.10", []string{"192.168.126.11", "192.168.126.12"}, "/labs/x/ssh/id_ed25519")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(assets, "log-bundle-20250101000000.tar.gz"), bundle)
	calls, _ := os.ReadFile(log)
	assert.Equal(t, "gather bootstrap --dir "+assets+" --bootstrap 192.168.126.10 --master 192.168.126.11 --master 192.168.126.12 --key /labs/x/ssh/id_ed25519\n", string(calls))
}

// A binary still open for writing somewhere (a process forked meanwhile
// holds the descriptor until it execs) cannot be run: "text file busy".
// BinaryVersion waits for it rather than calling the download broken.
func TestBinaryVersionWaitsOutABusyFile(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "openshift-install")
	w, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = w.WriteString("#!/bin/sh\necho openshift-install 4.19.10\n")
	require.NoError(t, err)
	released := make(chan struct{}, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		released <- struct{}{}
		w.Close()
	}()
	v, err := BinaryVersion(context.Background(), bin, "version")
	require.NoError(t, err, "the file is run once its writer closes it")
	assert.Equal(t, "openshift-install 4.19.10", v)
	select {
	case <-released:
	default:
		t.Fatal("BinaryVersion returned before the writer closed the file: the test did not make it busy")
	}
}
