package engine

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// mapShare is a BootFileShare for one test: the first Acquire of a key
// uploads, later ones copy from the pool it reported. (lab/class's
// BootFiles, the one class up uses, is tested in its package and with
// class up.)
type mapShare struct {
	mu   sync.Mutex
	have map[string]string
	// fallbacks are the copies that failed ("KEY from POOL").
	fallbacks []string
}

func (m *mapShare) Acquire(_ context.Context, key string) (string, func(string), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if pool, ok := m.have[key]; ok {
		return pool, nil, nil
	}
	return "", func(pool string) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if pool != "" {
			m.have[key] = pool
		}
	}, nil
}

func (m *mapShare) Fallback(key, from string) func(string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fallbacks = append(m.fallbacks, key+" from "+from)
	delete(m.have, key)
	return func(pool string) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if pool != "" {
			m.have[key] = pool
		}
	}
}

// siblingSpec is lab name with a's kernel, initrd and base image (a
// class's labs share the cache's), its own network and Ignition.
func siblingSpec(t *testing.T, a *spec.Spec, name, cidr string) *spec.Spec {
	t.Helper()
	s := testSpec(t, name, false)
	s.Network.CIDR = cidr
	s.Image.Kernel, s.Image.Initrd, s.Image.Path = a.Image.Kernel, a.Image.Initrd, a.Image.Path
	for _, n := range s.Nodes {
		require.NoError(t, os.MkdirAll(filepath.Dir(labdir.Ignition(s, n)), 0o755))
		require.NoError(t, os.WriteFile(labdir.Ignition(s, n), []byte(`{"ignition":{"version":"3.2.0"},"lab":"`+name+`","node":"`+n.Name+`"}`), 0o600))
	}
	return s
}

// With a share, the second lab on a host copies the boot files and the
// base image the first one uploaded, on the host, and uploads only its
// own Ignition; each lab's domains name its own pool's copy.
func TestUpCopiesWhatASiblingUploaded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	a := bootSpec(t)
	base := testSpec(t, "img", true)
	a.Image.Path = base.Image.Path
	b := siblingSpec(t, a, "u", "10.88.1.0/24")
	share := &mapShare{have: map[string]string{}}
	o := upOpts()
	o.Share = share

	_, err := Up(ctx, hv, a, o)
	require.NoError(t, err)
	boot, err := ReadBootFiles(a)
	require.NoError(t, err)
	assert.Equal(t, 1, countCalls(hv.Mutations(), "UploadVolume bootlab-t/boot-kernel-"))
	assert.Equal(t, 0, countCalls(hv.Mutations(), "CopyVolume"), "the first lab has nothing to copy")

	hv.Reset()
	res, err := Up(ctx, hv, b, o)
	require.NoError(t, err)
	calls := hv.Mutations()
	kernel := "boot-kernel-" + boot.Kernel.Digest
	assert.Contains(t, calls, "CopyVolume bootlab-u/"+kernel+" from bootlab-t/"+kernel)
	assert.Equal(t, 0, countCalls(calls, "UploadVolume bootlab-u/boot-kernel-"), "the kernel is not sent again")
	assert.Equal(t, 0, countCalls(calls, "UploadVolume bootlab-u/boot-initrd-"), "nor the initrd")
	assert.Equal(t, 3, countCalls(calls, "CopyVolume"), "kernel, initrd and the base image are copied")
	assert.Equal(t, len(b.Nodes), countCalls(calls, "UploadVolume bootlab-u/boot-"), "its own Ignition is uploaded")
	assert.Contains(t, stepDetails(res), "copied on the host")
	for _, n := range b.Nodes {
		assert.Contains(t, hv.DomainObjects[b.DomainName(n)].XML, "<kernel>"+filepath.Join(b.Storage.PoolDir, kernel)+"</kernel>")
	}
	st, err := labdir.LoadState(b.LabDir)
	require.NoError(t, err)
	assert.True(t, st.BootVolumes[kernel], "a copied volume is recorded complete, as an uploaded one")
}

// A copy that fails (the sibling's volume gone with its lab) falls back
// to an upload.
func TestUpUploadsWhenTheCopyFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hv := fake.New()
	a := bootSpec(t)
	b := siblingSpec(t, a, "u", "10.88.1.0/24")
	boot, err := ReadBootFiles(a)
	require.NoError(t, err)
	kernel := "boot-kernel-" + boot.Kernel.Digest
	share := &mapShare{have: map[string]string{kernel: "bootlab-gone"}}
	o := upOpts()
	o.Share = share
	_, err = Up(ctx, hv, b, o)
	require.NoError(t, err)
	calls := hv.Mutations()
	assert.Contains(t, calls, "CopyVolume bootlab-u/"+kernel+" from bootlab-gone/"+kernel)
	assert.Contains(t, calls, "UploadVolume bootlab-u/"+kernel)
	assert.Equal(t, []string{kernel + " from bootlab-gone"}, share.fallbacks, "the share is told, so it counts an upload")
	assert.Equal(t, "bootlab-u", share.have[kernel], "and offers the new upload to the labs after")
}
