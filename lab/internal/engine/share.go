package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/bootlab/bootlab/internal/userfile"
	"github.com/bootlab/bootlab/lab/hypervisor"
)

// BootFileShare lets the labs of a class on one host send each boot file
// (the kernel, the initrds, a rehearsal's Kubernetes volume, the base
// image) over the connection once: the first lab that needs one uploads
// it into its own pool, the others copy that volume on the host
// (hypervisor CopyVolume). Each lab still owns its copy: its down removes
// it, its checkpoints keep it, and no volume belongs to nobody.
type BootFileShare interface {
	// Acquire is asked before a lab uploads the content key names. It
	// returns a pool on the lab's host whose volume of the same name holds
	// that whole content, to copy; or "" and done: the lab uploads, then
	// calls done with its pool once the upload is complete, or with "" when
	// it failed (another lab then uploads). It waits while another lab
	// uploads the same content.
	Acquire(ctx context.Context, key string) (from string, done func(pool string), err error)
	// Fallback is told that copying key's content from pool from failed
	// (that lab was taken down, say): the lab uploads instead, and calls
	// done as after Acquire, so the share counts an upload, not a copy,
	// and offers this lab's volume to the labs after it.
	Fallback(key, from string) (done func(pool string))
}

// volumeFill is one volume to create in the lab's pool with the content
// of a file: a boot file or the base image.
type volumeFill struct {
	// key names the content for the share: a boot volume's name carries
	// its file's digest; the base image's names the file and its size.
	key, name, xml, source string
	size                   int64
	// what names the file in an error ("base image (image.path)").
	what string
}

// fill creates the volume and fills it: a copy on the host of a class
// sibling's complete one when the share has it, else an upload from the
// file. It says which it did: "copied" or "uploaded" ("created" on a
// driver that cannot upload).
func (r *labRun) fill(ctx context.Context, v volumeFill) (string, error) {
	pool := r.s.PoolName()
	var done func(string)
	if r.share != nil && r.caps.UploadsVolumes && r.plan == nil {
		from, d, err := r.share.Acquire(ctx, v.key)
		if err != nil {
			return "", err
		}
		if from != "" {
			_, err := r.hv.CopyVolume(ctx, pool, v.xml, from, v.name)
			if err == nil {
				return "copied", nil
			}
			// The sibling's copy is gone (its lab taken down) or the copy
			// failed: upload, as a lab of its own would.
			r.log.Warn("copying a boot file on the host failed: uploading it", "volume", v.name, "from", from, "err", err)
			done = r.share.Fallback(v.key, from)
			if err := r.hv.DeleteVolume(ctx, pool, v.name); err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
				done("")
				return "", err
			}
		} else {
			done = d
		}
	}
	ok := false
	if done != nil {
		defer func() {
			if ok {
				done(pool)
			} else {
				done("")
			}
		}()
	}
	if _, err := r.hv.CreateVolume(ctx, pool, v.xml); err != nil {
		return "", err
	}
	if !r.caps.UploadsVolumes { // the test driver cannot
		return "created", nil
	}
	f, _, err := userfile.Open(v.source)
	if err != nil {
		return "", fmt.Errorf("%s: %w", v.what, err)
	}
	defer f.Close()
	if err := r.hv.UploadVolume(ctx, pool, v.name, f, v.size); err != nil {
		return "", fmt.Errorf("upload %s as volume %s: %w", v.source, v.name, err)
	}
	ok = true
	return "uploaded", nil
}
