package class

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// Of labs asking for the same file at once, one uploads; the others wait
// and copy from its pool.
func TestBootFilesOneUploadsTheOthersCopy(t *testing.T) {
	t.Parallel()
	b := NewBootFiles()
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var froms []string
	uploaders := 0
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from, done, err := b.Acquire(ctx, "boot-kernel-abc")
			require.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			if from == "" {
				uploaders++
				require.NotNil(t, done)
				done("bootlab-lab" + string(rune('0'+i)))
				return
			}
			froms = append(froms, from)
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, uploaders)
	require.Len(t, froms, 5)
	for _, f := range froms {
		assert.Equal(t, froms[0], f, "every copy comes from the uploader's pool")
	}
	up, copied := b.Counts()
	assert.Equal(t, [2]int{1, 5}, [2]int{up, copied})
}

// When the upload fails, a waiting lab uploads instead.
func TestBootFilesAFailedUploadPassesOn(t *testing.T) {
	t.Parallel()
	b := NewBootFiles()
	ctx := context.Background()
	from, done, err := b.Acquire(ctx, "k")
	require.NoError(t, err)
	require.Empty(t, from)
	got := make(chan string)
	go func() {
		from, done2, err := b.Acquire(ctx, "k")
		assert.NoError(t, err)
		if from == "" {
			done2("bootlab-second")
		}
		got <- from
	}()
	done("")
	assert.Empty(t, <-got, "the waiter uploads itself")
	from, _, err = b.Acquire(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, "bootlab-second", from)

	cctx, cancel := context.WithCancel(ctx)
	_, done3, err := b.Acquire(ctx, "other")
	require.NoError(t, err)
	cancel()
	_, _, err = b.Acquire(cctx, "other")
	assert.ErrorIs(t, err, context.Canceled, "a waiter stops with its context")
	done3("")
}

// A lab built by an earlier class up vouches for the boot volumes its
// state records complete; one not recorded complete is uploaded again.
func TestBootFilesSeededFromBuiltLabs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	built := &spec.Spec{Name: "built", LabDir: filepath.Join(dir, "built")}
	fresh := &spec.Spec{Name: "fresh", LabDir: filepath.Join(dir, "fresh")}
	st := &labdir.State{BootVolumes: map[string]bool{"boot-kernel-abc": true, "boot-initrd-def": false}}
	require.NoError(t, st.Save(built.LabDir))
	b := NewBootFiles()
	b.SeedFromLabs([]*spec.Spec{built, fresh})
	from, _, err := b.Acquire(context.Background(), "boot-kernel-abc")
	require.NoError(t, err)
	assert.Equal(t, built.PoolName(), from)
	from, done, err := b.Acquire(context.Background(), "boot-initrd-def")
	require.NoError(t, err)
	assert.Empty(t, from, "not recorded complete: uploaded")
	done("")
}

// A copy that failed (its source lab was taken down) is counted as the
// upload it became, and the labs after it copy from the new upload, not
// from the pool that is gone.
func TestBootFilesAFailedCopyBecomesTheUpload(t *testing.T) {
	t.Parallel()
	b := NewBootFiles()
	ctx := context.Background()
	_, done, err := b.Acquire(ctx, "k")
	require.NoError(t, err)
	done("bootlab-first")
	from, _, err := b.Acquire(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "bootlab-first", from)
	up, copied := b.Counts()
	require.Equal(t, [2]int{1, 1}, [2]int{up, copied})

	redo := b.Fallback("k", "bootlab-first")
	up, copied = b.Counts()
	assert.Equal(t, [2]int{2, 0}, [2]int{up, copied}, "the failed copy counts as an upload")
	got := make(chan string)
	go func() {
		from, _, err := b.Acquire(ctx, "k")
		assert.NoError(t, err)
		got <- from
	}()
	redo("bootlab-second")
	assert.Equal(t, "bootlab-second", <-got, "the next lab copies from the new upload")

	// A fallback from a pool the share no longer offers changes what is
	// counted, not what is offered; its failed upload uncounts itself.
	redo2 := b.Fallback("k", "bootlab-first")
	redo2("")
	from, _, err = b.Acquire(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, "bootlab-second", from)
	up, copied = b.Counts()
	assert.Equal(t, [2]int{2, 1}, [2]int{up, copied})
}
