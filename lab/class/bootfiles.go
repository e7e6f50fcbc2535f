package class

import (
	"context"
	"sync"

	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// BootFiles is a class's share of boot files on one host (the engine's
// BootFileShare): the first of its labs there that needs a boot file (the
// probe kernel and initrd, the rehearsal initrd, the Kubernetes volume,
// the base image) uploads it into its own pool, and every other lab there
// copies that volume on the host, so each file crosses the connection to
// a host once per class up, not once per lab. Each lab owns its copy.
type BootFiles struct {
	mu   sync.Mutex
	have map[string]*upload
	// uploaded and copied count what Acquire decided.
	uploaded, copied int
}

// upload is one content's state on the host: ready is closed once its
// uploader is done, pool then names the pool holding it ("" if it failed).
type upload struct {
	ready chan struct{}
	pool  string
}

// NewBootFiles is an empty share: nothing is known to be on the host.
func NewBootFiles() *BootFiles { return &BootFiles{have: map[string]*upload{}} }

// SeedFromLabs adds the boot volumes the labs of specs (on this share's
// host) recorded as uploaded complete in an earlier up, so a lab added to
// a class later copies them too. A volume since removed makes the copy
// fail; the engine then uploads.
func (b *BootFiles) SeedFromLabs(specs []*spec.Spec) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range specs {
		st, err := labdir.LoadState(s.LabDir)
		if err != nil || st == nil {
			continue
		}
		for name, done := range st.BootVolumes {
			if _, ok := b.have[name]; ok || !done {
				continue
			}
			u := &upload{ready: make(chan struct{}), pool: s.PoolName()}
			close(u.ready)
			b.have[name] = u
		}
	}
}

// Acquire returns a pool holding key's content to copy, or "" and done
// when the caller is to upload it (engine.BootFileShare). It waits while
// another lab uploads the same content; if that upload fails, one of the
// waiters uploads.
func (b *BootFiles) Acquire(ctx context.Context, key string) (string, func(pool string), error) {
	for {
		b.mu.Lock()
		u, ok := b.have[key]
		if !ok {
			u = &upload{ready: make(chan struct{})}
			b.have[key] = u
			b.uploaded++
			b.mu.Unlock()
			return "", b.finish(key, u), nil
		}
		b.mu.Unlock()
		select {
		case <-u.ready:
		case <-ctx.Done():
			return "", nil, ctx.Err()
		}
		b.mu.Lock()
		pool := u.pool
		if pool != "" {
			b.copied++
		}
		b.mu.Unlock()
		if pool != "" {
			return pool, nil, nil
		}
	}
}

// finish is the done of an upload of key (Acquire, Fallback): it offers
// the uploader's pool to the labs waiting, or, when the upload failed,
// lets the next of them upload.
func (b *BootFiles) finish(key string, u *upload) func(pool string) {
	var once sync.Once
	return func(pool string) {
		once.Do(func() {
			b.mu.Lock()
			u.pool = pool
			if pool == "" {
				if b.have[key] == u {
					delete(b.have, key)
				}
				b.uploaded--
			}
			b.mu.Unlock()
			close(u.ready)
		})
	}
}

// Fallback implements engine.BootFileShare: the copy from pool from
// failed and the lab uploads instead. It counts an upload where Acquire
// counted a copy, and, when from is still what the share offers for key,
// has the labs after this one wait for its upload and copy from it.
func (b *BootFiles) Fallback(key, from string) func(pool string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.copied--
	b.uploaded++
	u := &upload{ready: make(chan struct{})}
	if cur, ok := b.have[key]; !ok || cur.pool == from {
		b.have[key] = u
	}
	return b.finish(key, u)
}

// Counts are how many boot files a lab on this host uploaded and how many
// copies labs made on the host instead of uploading.
func (b *BootFiles) Counts() (uploaded, copied int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.uploaded, b.copied
}
