package cache

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// fillCache writes one artifact of each kind the writers make, plus the
// files that are not artifacts.
func fillCache(t *testing.T, root string) {
	t.Helper()
	files := map[string]string{
		"rhcos/rhcos-9.6.20250402-0-qemu.x86_64.qcow2":        "QFI\xfbrhcos image",
		"rhcos/rhcos-9.6.20250402-0-qemu.x86_64.qcow2.sha256": "abc\n",
		"clients/4.19.0/oc":                                           "#!/bin/sh\necho oc\n",
		"clients/4.19.0/openshift-install":                            "#!/bin/sh\necho installer\n",
		"probe/0123456789abcdef/vmlinuz":                              "kernel",
		"probe/0123456789abcdef/initramfs.img":                        "initrd",
		"probe/0123456789abcdef/base.qcow2":                           "QFI\xfbbase",
		"debian/download/linux-image-cloud-amd64_6.1.192-2_amd64.deb": "deb",
		"agent/bootlab-probe":                                         "agent",
		"debian-tools/download/cpio_2%3a2.13_amd64.deb":               "cpio deb",
		"debian-tools/tools-fd30f349519e9f6a.cpio.gz":                 "tools",
	}
	for rel, body := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	require.NoError(t, os.Chmod(filepath.Join(root, "clients/4.19.0/oc"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(root, "clients/4.19.0/openshift-install"), 0o755))
	// Not artifacts: a partial download, a temporary, the extracted kernel.
	for _, rel := range []string{"gobuild/etcd/3.5.21-0123456789abcdef.lock", "rhcos/x.qcow2.gz.partial", "probe/0123456789abcdef/base.qcow2.tmp", "debian/root/boot/vmlinuz-6.1", "debian-tools/root/cpio/usr/bin/cpio",
		"official/kubernetes/1.32.13-0123456789abcdef.tmp/download/kubectl", "official/kubernetes/1.32.13-0123456789abcdef.lock"} {
		p := filepath.Join(root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
	}
}

func sums(t *testing.T, es []Entry) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range es {
		out[e.Path] = e.SHA256
	}
	return out
}

func TestListKindsVersionsAndSums(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	fillCache(t, root)
	es, err := List(root)
	require.NoError(t, err)
	got := map[string][2]string{}
	for _, e := range es {
		got[e.Path] = [2]string{e.Kind, e.Version}
		require.Len(t, e.SHA256, 64, e.Path)
		require.False(t, e.LastUsed.IsZero(), e.Path)
	}
	require.Equal(t, map[string][2]string{
		"rhcos/rhcos-9.6.20250402-0-qemu.x86_64.qcow2":        {KindRHCOS, "9.6.20250402-0"},
		"rhcos/rhcos-9.6.20250402-0-qemu.x86_64.qcow2.sha256": {KindRHCOS, "9.6.20250402-0"},
		"clients/4.19.0/oc":                                           {KindClient, "4.19.0"},
		"clients/4.19.0/openshift-install":                            {KindClient, "4.19.0"},
		"probe/0123456789abcdef/vmlinuz":                              {KindProbeImage, "0123456789abcdef"},
		"probe/0123456789abcdef/initramfs.img":                        {KindProbeImage, "0123456789abcdef"},
		"probe/0123456789abcdef/base.qcow2":                           {KindProbeImage, "0123456789abcdef"},
		"debian/download/linux-image-cloud-amd64_6.1.192-2_amd64.deb": {KindDebianPackage, "6.1.192-2"},
		"agent/bootlab-probe":                                         {KindProbeAgent, ""},
		"debian-tools/download/cpio_2%3a2.13_amd64.deb":               {KindDebianPackage, "2:2.13"},
		"debian-tools/tools-fd30f349519e9f6a.cpio.gz":                 {KindRehearsalTools, "fd30f349519e9f6a"},
	}, got)
	k := sha256.Sum256([]byte("kernel"))
	require.Equal(t, hex.EncodeToString(k[:]), sums(t, es)["probe/0123456789abcdef/vmlinuz"])
}

func TestClassifyBuiltPrograms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ rel, kind, version string }{
		{"gobuild/etcd/3.5.21-0123456789abcdef/etcd", KindGoBinary, "3.5.21"},
		{"gobuild/kubernetes/1.32.13-0123456789abcdef/hyperkube", KindGoBinary, "1.32.13"},
		{"gobuild/etcd/3.6.0-rc.1-0123456789abcdef/etcd", KindGoBinary, "3.6.0-rc.1"},
		{"gobuild/etcd/stray", KindOther, ""},
		{"official/kubernetes/1.32.13-0123456789abcdef/kube-apiserver", KindOfficialBinary, "1.32.13"},
		{"official/etcd/3.5.26-0123456789abcdef/etcdctl", KindOfficialBinary, "3.5.26"},
		{"official/etcd/stray", KindOther, ""},
		{"kube-volume/1.32.13-0123456789abcdef/kubernetes-v1.qcow2", KindKubeVolume, "1.32.13"},
		{"kube-volume/1.32.13-0123456789abcdef/stray.img", KindOther, ""},
	} {
		kind, version := Classify(tc.rel)
		assert.Equal(t, tc.kind, kind, tc.rel)
		assert.Equal(t, tc.version, version, tc.rel)
	}
}

func TestListMissingRootIsEmpty(t *testing.T) {
	t.Parallel()
	es, err := List(filepath.Join(t.TempDir(), "none"))
	require.NoError(t, err)
	require.Empty(t, es)
}

func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"cache.tar", "cache.tar.gz"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, b := t.TempDir(), filepath.Join(t.TempDir(), "cache-b")
			fillCache(t, a)
			file := filepath.Join(t.TempDir(), name)
			m, err := Export(a, file, ExportOptions{})
			require.NoError(t, err)
			require.Len(t, m.Files, 11)
			fi, err := os.Stat(file)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())

			res, err := Import(b, file)
			require.NoError(t, err)
			require.Len(t, res.Imported, 11)
			require.Empty(t, res.Skipped)
			la, err := List(a)
			require.NoError(t, err)
			lb, err := List(b)
			require.NoError(t, err)
			require.Equal(t, sums(t, la), sums(t, lb))
			oc, err := os.Stat(filepath.Join(b, "clients/4.19.0/oc"))
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o755), oc.Mode().Perm(), "executables stay executable")
			k, err := os.Stat(filepath.Join(b, "probe/0123456789abcdef/vmlinuz"))
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o644), k.Mode().Perm())
			leftovers, _ := filepath.Glob(filepath.Join(b, importPrefix+"*"))
			require.Empty(t, leftovers, "the temporary directory is removed")

			// A second import finds everything in place.
			res, err = Import(b, file)
			require.NoError(t, err)
			require.Empty(t, res.Imported)
			require.Len(t, res.Skipped, 11)
		})
	}
}

func TestExportManifestIsFirst(t *testing.T) {
	t.Parallel()
	a := t.TempDir()
	fillCache(t, a)
	file := filepath.Join(t.TempDir(), "c.tar")
	_, err := Export(a, file, ExportOptions{})
	require.NoError(t, err)
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	tr := tar.NewReader(f)
	hdr, err := tr.Next()
	require.NoError(t, err)
	require.Equal(t, ManifestName, hdr.Name)
	var m Manifest
	require.NoError(t, json.NewDecoder(tr).Decode(&m))
	require.Equal(t, ManifestKind, m.Kind)
	names := []string{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		names = append(names, hdr.Name)
		require.Contains(t, []int64{0o644, 0o755}, hdr.Mode, hdr.Name)
	}
	want := []string{}
	for _, mf := range m.Files {
		want = append(want, mf.Path)
	}
	require.Equal(t, want, names)
}

// flip changes one byte of the first occurrence of needle in file.
func flip(t *testing.T, file string, needle string) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	i := bytes.Index(data, []byte(needle))
	require.GreaterOrEqual(t, i, 0)
	data[i] ^= 0x20
	require.NoError(t, os.WriteFile(file, data, 0o644))
}

func TestImportRefusesATamperedFileNamingIt(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	fillCache(t, a)
	file := filepath.Join(t.TempDir(), "c.tar")
	_, err := Export(a, file, ExportOptions{})
	require.NoError(t, err)
	flip(t, file, "kernel")
	_, err = Import(b, file)
	var ce *ChecksumError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "probe/0123456789abcdef/vmlinuz", ce.Path)
	require.ErrorContains(t, err, "probe/0123456789abcdef/vmlinuz has sha256")
	require.ErrorContains(t, err, "nothing was imported")
	es, err := List(b)
	require.NoError(t, err)
	require.Empty(t, es, "nothing is imported")
	leftovers, _ := filepath.Glob(filepath.Join(b, importPrefix+"*"))
	require.Empty(t, leftovers)
}

// rewrite copies an export, letting edit drop or replace entries.
func rewrite(t *testing.T, src string, edit func(hdr *tar.Header, body []byte) ([]byte, bool)) string {
	t.Helper()
	f, err := os.Open(src)
	require.NoError(t, err)
	defer f.Close()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		body, keep := edit(hdr, body)
		if !keep {
			continue
		}
		hdr.Size = int64(len(body))
		require.NoError(t, tw.WriteHeader(hdr))
		_, err = tw.Write(body)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	out := filepath.Join(t.TempDir(), "edited.tar")
	require.NoError(t, os.WriteFile(out, buf.Bytes(), 0o644))
	return out
}

func TestImportRefusesBadArchives(t *testing.T) {
	t.Parallel()
	a := t.TempDir()
	fillCache(t, a)
	file := filepath.Join(t.TempDir(), "c.tar")
	_, err := Export(a, file, ExportOptions{})
	require.NoError(t, err)
	cases := map[string]struct {
		edit func(hdr *tar.Header, body []byte) ([]byte, bool)
		want string
	}{
		"missing file": {func(h *tar.Header, b []byte) ([]byte, bool) { return b, h.Name != "clients/4.19.0/oc" },
			"lacks clients/4.19.0/oc, listed in its manifest"},
		"extra file": {func(h *tar.Header, b []byte) ([]byte, bool) {
			if h.Name == "agent/bootlab-probe" {
				h.Name = "agent/evil"
			}
			return b, true
		}, "agent/evil is not in the manifest"},
		"longer file": {func(h *tar.Header, b []byte) ([]byte, bool) {
			if h.Name == "agent/bootlab-probe" {
				b = append(b, '!')
			}
			return b, true
		}, "agent/bootlab-probe is 6 bytes, the manifest says 5"},
		"no manifest first": {func(h *tar.Header, b []byte) ([]byte, bool) { return b, h.Name != ManifestName },
			"not a bootlab cache export"},
		"path escaping the cache": {func(h *tar.Header, b []byte) ([]byte, bool) {
			if h.Name == ManifestName {
				b = bytes.Replace(b, []byte(`"agent/bootlab-probe"`), []byte(`"../agent/bootlab-probe"`), 1)
			}
			return b, true
		}, `path "../agent/bootlab-probe" is not a clean relative path`},
		"a lab file": {func(h *tar.Header, b []byte) ([]byte, bool) {
			if h.Name == ManifestName {
				b = bytes.Replace(b, []byte(`"agent/bootlab-probe"`), []byte(`"labs/x/state.json"`), 1)
			}
			return b, true
		}, `looks like a lab's file`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := t.TempDir()
			_, err := Import(b, rewrite(t, file, tc.edit))
			require.ErrorContains(t, err, tc.want)
			es, lerr := List(b)
			require.NoError(t, lerr)
			require.Empty(t, es, "nothing is imported")
		})
	}
}

func TestImportKeepsIdenticalAndReplacesDifferent(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	fillCache(t, a)
	file := filepath.Join(t.TempDir(), "c.tar.gz")
	_, err := Export(a, file, ExportOptions{})
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(b, "agent"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(b, "agent/bootlab-probe"), []byte("agent"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(b, "probe/0123456789abcdef"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(b, "probe/0123456789abcdef/vmlinuz"), []byte("stale"), 0o644))
	res, err := Import(b, file)
	require.NoError(t, err)
	require.Equal(t, []string{"agent/bootlab-probe"}, res.Skipped)
	require.Contains(t, res.Imported, "probe/0123456789abcdef/vmlinuz")
	got, err := os.ReadFile(filepath.Join(b, "probe/0123456789abcdef/vmlinuz"))
	require.NoError(t, err)
	require.Equal(t, "kernel", string(got))
}

func TestExportRefusesSecretsAndLabs(t *testing.T) {
	t.Parallel()
	t.Run("private file", func(t *testing.T) {
		a := t.TempDir()
		fillCache(t, a)
		require.NoError(t, os.WriteFile(filepath.Join(a, "agent/id_ed25519"), []byte("key"), 0o600))
		file := filepath.Join(t.TempDir(), "c.tar")
		_, err := Export(a, file, ExportOptions{})
		require.ErrorContains(t, err, "cache file agent/id_ed25519 is not readable by others (mode 0600)")
		require.NoFileExists(t, file)
	})
	t.Run("lab directory inside", func(t *testing.T) {
		a := t.TempDir()
		fillCache(t, a)
		require.NoError(t, os.MkdirAll(filepath.Join(a, "mylab"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(a, "mylab/state.json"), []byte("{}"), 0o644))
		_, err := Export(a, filepath.Join(t.TempDir(), "c.tar"), ExportOptions{})
		require.ErrorContains(t, err, "cache file mylab/state.json is in a lab directory (mylab holds a lab's state.json)")
	})
	t.Run("lab home overlaps", func(t *testing.T) {
		a := t.TempDir()
		fillCache(t, a)
		_, err := Export(a, filepath.Join(t.TempDir(), "c.tar"), ExportOptions{LabDirs: []string{filepath.Join(a, "labs", "l1")}})
		require.ErrorContains(t, err, "and the lab directory")
		require.ErrorContains(t, err, "set BOOTLAB_CACHE to a directory of its own")
	})
	t.Run("export inside the cache", func(t *testing.T) {
		a := t.TempDir()
		_, err := Export(a, filepath.Join(a, "c.tar"), ExportOptions{})
		require.ErrorContains(t, err, "is inside the cache")
	})
}

func TestPrune(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	mk := func(hash string, age time.Duration) string {
		dir := filepath.Join(root, "probe", hash)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for _, f := range []string{"vmlinuz", "vmlinux-pvh", "initramfs.img", "base.qcow2"} {
			p := filepath.Join(dir, f)
			require.NoError(t, os.WriteFile(p, []byte("1234"), 0o644))
			require.NoError(t, os.Chtimes(p, now.Add(-age), now.Add(-age)))
		}
		require.NoError(t, os.Chtimes(dir, now.Add(-age), now.Add(-age)))
		return dir
	}
	used := mk("aaaaaaaaaaaaaaaa", 30*24*time.Hour)
	old := mk("bbbbbbbbbbbbbbbb", 10*24*time.Hour)
	fresh := mk("cccccccccccccccc", time.Hour)
	// A lab made now boots the image's PVH kernel (probe.PVHKernelFile).
	refs := []string{filepath.Join(used, "vmlinux-pvh"), filepath.Join(used, "initramfs.img")}

	dry, err := Prune(root, PruneOptions{Referenced: refs, OlderThan: 24 * time.Hour, DryRun: true, Now: now})
	require.NoError(t, err)
	require.Len(t, dry, 1)
	require.Equal(t, old, dry[0].Path)
	require.Equal(t, int64(16), dry[0].Size)
	require.DirExists(t, old, "a dry run removes nothing")

	got, err := Prune(root, PruneOptions{Referenced: refs, Now: now})
	require.NoError(t, err)
	require.Equal(t, []string{old, fresh}, []string{got[0].Path, got[1].Path})
	require.NoDirExists(t, old)
	require.NoDirExists(t, fresh)
	require.DirExists(t, used, "an image a lab boots is kept")
}

func TestImportRefusesWhenTheCacheDiskIsTooSmall(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	fillCache(t, a)
	file := filepath.Join(t.TempDir(), "c.tar")
	_, err := Export(a, file, ExportOptions{})
	require.NoError(t, err)
	small := func(string) (uint64, error) { return 10, nil }
	_, err = importArchive(b, file, small, false)
	require.ErrorContains(t, err, "needs 103 B free in the cache "+b+" (files are checked there before they move in), it has 10 B")
	require.ErrorContains(t, err, "set BOOTLAB_CACHE to a larger disk")
	es, err := List(b)
	require.NoError(t, err)
	require.Empty(t, es)

	// Once the files are there, a re-import needs no space.
	_, err = Import(b, file)
	require.NoError(t, err)
	_, err = importArchive(b, file, small, false)
	require.NoError(t, err)
	have, err := freeBytes(b)
	require.NoError(t, err)
	require.Positive(t, have)
}

// Prune removes only probe image directories the builder made: another
// directory or file under probe/ (or a cache root pointed at someone's
// directory) stays, whatever its age.
func TestPruneLeavesWhatItDidNotMake(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	keep := map[string]string{
		"probe/photos/cat.jpg":                            "meow",
		"probe/0123456789abcdef/notes.txt":                "a file the builder never writes",
		"probe/0123456789abcdef/vmlinuz":                  "k",
		"probe/not-a-hash-0000000/vmlinuz":                "k",
		"probe/fedcba9876543210/initramfs.img":            "no kernel: not a built image",
		"probe/1111111111111111/vmlinuz":                  "k",
		"probe/1111111111111111/saved-start-0123.img.bak": "not a name bootlab writes",
	}
	for p, content := range keep {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
		require.NoError(t, os.Chtimes(full, now.Add(-90*24*time.Hour), now.Add(-90*24*time.Hour)))
	}
	got, err := Prune(root, PruneOptions{Now: now})
	require.NoError(t, err)
	require.Empty(t, got)
	for p, content := range keep {
		b, err := os.ReadFile(filepath.Join(root, p))
		require.NoError(t, err, p)
		require.Equal(t, content, string(b))
	}
}

// A dry run of import checks every file as Import does and says what it
// would move in, writing nothing into the cache, not even its directory.
func TestPlanImportWritesNothing(t *testing.T) {
	t.Parallel()
	a := t.TempDir()
	fillCache(t, a)
	file := filepath.Join(t.TempDir(), "c.tar")
	_, err := Export(a, file, ExportOptions{})
	require.NoError(t, err)

	b := filepath.Join(t.TempDir(), "cache-b")
	res, err := PlanImport(b, file)
	require.NoError(t, err)
	require.Len(t, res.Imported, 11)
	_, err = os.Stat(b)
	require.ErrorIs(t, err, os.ErrNotExist, "a dry run creates no cache directory")

	// Against a cache that has everything, nothing would be imported.
	res, err = PlanImport(a, file)
	require.NoError(t, err)
	require.Empty(t, res.Imported)
	require.Len(t, res.Skipped, 11)

	flip(t, file, "kernel")
	_, err = PlanImport(b, file)
	var ce *ChecksumError
	require.ErrorAs(t, err, &ce, "a dry run refuses a tampered archive as import does")
	_, err = os.Stat(b)
	require.ErrorIs(t, err, os.ErrNotExist)
}

// Prune removes a probe image's directory with what lab up adds to it (a
// saved-start image, its lock and declined marker, the rehearsal initrd,
// a restore pipe left by an interrupted up) and keeps one a lab up is
// using now: a saved start being made (its lock held) or a node being
// restored (a pipe less than an hour old).
func TestPruneTakesWhatLabUpAddsAndSparesWhatIsInUse(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	now := time.Now()
	mk := func(hash string, extra ...string) string {
		dir := filepath.Join(root, "probe", hash)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for _, f := range append([]string{"vmlinuz", "vmlinux-pvh", "initramfs.img", "base.qcow2"}, extra...) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("1234"), 0o644))
		}
		return dir
	}
	fifo := func(dir, name string, age time.Duration) {
		p := filepath.Join(dir, name)
		require.NoError(t, unix.Mkfifo(p, 0o600))
		require.NoError(t, os.Chtimes(p, now.Add(-age), now.Add(-age)))
	}
	used := mk("aaaaaaaaaaaaaaaa", "saved-start-0123456789abcdef.img", "saved-start-0123456789abcdef.img.lock",
		"saved-start-fedcba9876543210.img.none", "initramfs-rehearsal-00112233445566ff.img")
	fifo(used, ".restore-master-0-a1b2c3d4e5f6.fifo", 2*time.Hour)
	making := mk("bbbbbbbbbbbbbbbb", "saved-start-0123456789abcdef.img.lock")
	lock, err := os.Open(filepath.Join(making, "saved-start-0123456789abcdef.img.lock"))
	require.NoError(t, err)
	defer lock.Close()
	require.NoError(t, unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB))
	restoring := mk("cccccccccccccccc", "saved-start-0123456789abcdef.img")
	fifo(restoring, ".restore-bootstrap-0123456789ab.fifo", time.Second)

	dry, err := Prune(root, PruneOptions{DryRun: true, Now: now})
	require.NoError(t, err)
	require.Len(t, dry, 1)
	assert.Equal(t, used, dry[0].Path)
	assert.Equal(t, int64(8*4), dry[0].Size, "the saved-start files count in its size")
	got, err := Prune(root, PruneOptions{Now: now})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.NoDirExists(t, used)
	assert.DirExists(t, making, "a saved start being made keeps its directory")
	assert.DirExists(t, restoring, "a restore in progress keeps its directory")

	// Its lock let go, the first is an image like any other; a pipe an
	// hour old is an interrupted up's, not a restore.
	require.NoError(t, unix.Flock(int(lock.Fd()), unix.LOCK_UN))
	require.NoError(t, os.Chtimes(filepath.Join(restoring, ".restore-bootstrap-0123456789ab.fifo"), now.Add(-2*time.Hour), now.Add(-2*time.Hour)))
	got, err = Prune(root, PruneOptions{Now: now})
	require.NoError(t, err)
	assert.Len(t, got, 2)
	assert.NoDirExists(t, making)
	assert.NoDirExists(t, restoring)
}

// An export never takes the place of a file the user has: an existing
// file is kept unless Replace, a FIFO or device never (a rename would put
// the tar where the pipe was), and nothing is left beside it.
func TestExportKeepsWhatIsAtItsPath(t *testing.T) {
	t.Parallel()
	a := t.TempDir()
	fillCache(t, a)
	dir := t.TempDir()
	secret := filepath.Join(dir, "pull-secret.json")
	require.NoError(t, os.WriteFile(secret, []byte(`{"auths":{}}`), 0o600))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))

	_, err := Export(a, secret, ExportOptions{})
	require.EqualError(t, err, "export file "+secret+": exists, and is kept: give another path, or --force to replace it")
	require.ErrorIs(t, err, os.ErrExist)
	for _, replace := range []bool{false, true} {
		start := time.Now()
		_, err = Export(a, fifo, ExportOptions{Replace: replace})
		require.ErrorContains(t, err, "export file "+fifo+": is a FIFO (named pipe), not a regular file")
		assert.Less(t, time.Since(start), time.Second)
	}
	data, err := os.ReadFile(secret)
	require.NoError(t, err)
	assert.Equal(t, `{"auths":{}}`, string(data), "the file is as it was")
	fi, err := os.Lstat(fifo)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeNamedPipe, "the FIFO is still a FIFO")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary file left")

	// Asked to, a regular file is replaced whole.
	m, err := Export(a, secret, ExportOptions{Replace: true})
	require.NoError(t, err)
	res, err := PlanImport(t.TempDir(), secret)
	require.NoError(t, err)
	assert.Len(t, res.Imported, len(m.Files))
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary file left")
}
