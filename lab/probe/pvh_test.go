package probe

import (
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testVmlinux is a small x86-64 kernel ELF as the kernel build lays one
// out: two loadable segments, the second with 1 MiB of zeros inside it and
// zeros at its end, and the notes with Xen's PVH entry (pvh true) or
// only Linux's own note (pvh false).
func testVmlinux(pvh bool) []byte {
	text := bytes.Repeat([]byte("kernel text "), 2000)
	data := append(append(bytes.Repeat([]byte{0xaa}, 5000), make([]byte, 1<<20)...), bytes.Repeat([]byte{0xbb}, 3000)...)
	data = append(data, make([]byte, 200<<10)...)
	var notes []byte
	note := func(name string, typ uint32, desc []byte) {
		n := append([]byte(name), 0)
		notes = binary.LittleEndian.AppendUint32(notes, uint32(len(n)))
		notes = binary.LittleEndian.AppendUint32(notes, uint32(len(desc)))
		notes = binary.LittleEndian.AppendUint32(notes, typ)
		notes = append(notes, n...)
		for len(notes)%4 != 0 {
			notes = append(notes, 0)
		}
		notes = append(notes, desc...)
	}
	note("Linux", 6, []byte("6.1\x00"))
	if pvh {
		note("Xen", xenNotePhys32Entry, []byte{0x00, 0x10, 0x00, 0x01})
	}
	loads := []segment{
		{paddr: 0x1000000, vaddr: 0xffffffff81000000, flags: elf.PF_R | elf.PF_X, data: text, memsz: uint64(len(text))},
		{paddr: 0x2000000, vaddr: 0xffffffff82000000, flags: elf.PF_R | elf.PF_W, data: data, memsz: uint64(len(data)) + 64<<10},
	}
	return writeELF(0x1000000, loads, [][]byte{notes})
}

// bzImage wraps a compressed payload in a boot protocol 2.15 header.
func bzImage(payload []byte) []byte {
	const setupSects = 3
	b := make([]byte, (setupSects+1)*512)
	b[0x1f1] = setupSects
	copy(b[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(b[0x206:], 0x020f)
	binary.LittleEndian.PutUint32(b[0x248:], 0x100)
	binary.LittleEndian.PutUint32(b[0x24c:], uint32(len(payload)))
	b = append(b, make([]byte, 0x100)...) // the decompressor's code before the payload
	return append(append(b, payload...), "trailing code"...)
}

func gzipPayload(t *testing.T, data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// lz4Payload is data as the kernel build's `lz4 -l` and size_append leave
// it: the legacy magic, blocks of at most 8 MiB each written as literals
// (valid LZ4, uncompressed), then the length.
func lz4Payload(data []byte) []byte {
	out := append([]byte(nil), lz4LegacyMagic...)
	for rest := data; len(rest) > 0; {
		n := min(len(rest), lz4LegacyBlock)
		blk := []byte{0xf0}
		for l := n - 15; ; l -= 255 {
			if l < 255 {
				blk = append(blk, byte(l))
				break
			}
			blk = append(blk, 255)
		}
		blk = append(blk, rest[:n]...)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(blk)))
		out = append(out, blk...)
		rest = rest[n:]
	}
	return binary.LittleEndian.AppendUint32(out, uint32(len(data)))
}

// memoryImage is what a loader makes of an ELF's PT_LOAD segments: each
// one's file bytes at its physical address, zeros to its memory size.
func memoryImage(t *testing.T, b []byte) map[uint64][]byte {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(b))
	require.NoError(t, err)
	lo, hi := loadSpan(f)
	mem := make([]byte, hi-lo)
	written := make([]bool, hi-lo)
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		at := p.Paddr - lo
		copy(mem[at:], b[p.Off:p.Off+p.Filesz])
		clear(mem[at+p.Filesz : at+p.Memsz])
		for i := at; i < at+p.Memsz; i++ {
			written[i] = true
		}
	}
	// Runs of loaded memory, by start address, so two images compare whole.
	out := map[uint64][]byte{}
	for i := 0; i < len(mem); {
		if !written[i] {
			i++
			continue
		}
		j := i
		for j < len(mem) && written[j] {
			j++
		}
		out[lo+uint64(i)] = mem[i:j]
		i = j
	}
	return out
}

// loadSpan is the physical address range f's PT_LOAD segments fill.
func loadSpan(f *elf.File) (lo, hi uint64) {
	lo = ^uint64(0)
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			lo, hi = min(lo, p.Paddr), max(hi, p.Paddr+p.Memsz)
		}
	}
	return lo, max(lo, hi)
}

// The PVH kernel loads the same bytes at the same addresses as the
// vmlinux it was made from, starts at the same entry, keeps the PVH
// note, and leaves the long zero runs to the loader.
func TestPVHKernelLoadsWhatTheKernelLoads(t *testing.T) {
	t.Parallel()
	vmlinux := testVmlinux(true)
	for name, payload := range map[string][]byte{"gzip": gzipPayload(t, vmlinux), "lz4": lz4Payload(vmlinux)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, err := PVHKernel(context.Background(), bzImage(payload))
			require.NoError(t, err)
			f, err := elf.NewFile(bytes.NewReader(out))
			require.NoError(t, err)
			assert.Equal(t, uint64(0x1000000), f.Entry)
			assert.Equal(t, elf.EM_X86_64, f.Machine)
			assert.Equal(t, memoryImage(t, vmlinux), memoryImage(t, out))
			assert.Less(t, len(out), len(vmlinux)-(1<<20), "the zero runs are not in the file")
			var notes [][]byte
			for _, p := range f.Progs {
				if p.Type == elf.PT_NOTE {
					notes = append(notes, out[p.Off:p.Off+p.Filesz])
				}
				if p.Type == elf.PT_LOAD {
					assert.Equal(t, p.Vaddr%4096, p.Off%4096, "segment at %#x: file offset and address agree modulo the page", p.Vaddr)
				}
			}
			assert.True(t, hasPVHNote(notes))
		})
	}
}

// An xz payload, as Debian's generic kernels have, goes through the xz
// command (unpackWith, shared with the modules' .ko.xz), its size trailer
// checked as LZ4's is.
func TestPVHKernelFromAnXzPayload(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("xz")
	require.NoError(t, err, "apt-get install -y xz-utils")
	vmlinux := testVmlinux(true)
	cmd := exec.Command("xz", "-c", "--check=crc32")
	cmd.Stdin = bytes.NewReader(vmlinux)
	packed, err := cmd.Output()
	require.NoError(t, err)
	out, err := PVHKernel(context.Background(), bzImage(binary.LittleEndian.AppendUint32(packed, uint32(len(vmlinux)))))
	require.NoError(t, err)
	assert.Equal(t, memoryImage(t, vmlinux), memoryImage(t, out))

	mod := filepath.Join(t.TempDir(), "virtio_rng.ko.xz")
	require.NoError(t, os.WriteFile(mod, packed, 0o644))
	got, err := readModule(context.Background(), mod)
	require.NoError(t, err)
	assert.Equal(t, vmlinux, got, "a module's .ko.xz, the same command")
}

// A kernel bootlab cannot make a PVH kernel of says why, as ErrNoPVH: the
// probe image then boots the bzImage.
func TestPVHKernelRefusals(t *testing.T) {
	t.Parallel()
	good := lz4Payload(testVmlinux(true))
	badSize := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(badSize[len(badSize)-4:], uint32(len(testVmlinux(true))+100))
	oldProto := bzImage(good)
	binary.LittleEndian.PutUint16(oldProto[0x206:], 0x0206)
	outside := bzImage(good)
	binary.LittleEndian.PutUint32(outside[0x24c:], uint32(len(outside)))
	for name, tc := range map[string]struct {
		bz   []byte
		want string
	}{
		"not a bzImage":     {[]byte("MZ not a kernel"), "no HdrS"},
		"old protocol":      {oldProto, "boot protocol 2.06"},
		"payload outside":   {outside, "is not inside"},
		"bzip2":             {bzImage(append([]byte("BZh91AY&SY"), 0, 0, 0, 0)), "not gzip, LZ4, xz or zstd"},
		"no PVH note":       {bzImage(lz4Payload(testVmlinux(false))), "no PVH entry note"},
		"size trailer":      {bzImage(badSize), fmt.Sprintf("its trailer says %d", len(testVmlinux(true))+100)},
		"not an ELF inside": {bzImage(lz4Payload([]byte("not an elf file at all"))), "not an ELF file"},
		"gzip cut short":    {bzImage(gzipPayload(t, testVmlinux(true))[:300]), "gzip payload"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := PVHKernel(context.Background(), tc.bz)
			require.ErrorIs(t, err, ErrNoPVH)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestLZ4Block(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		src  []byte
		want string
		err  string
	}{
		"literals only": {src: []byte{0x50, 'h', 'e', 'l', 'l', 'o'}, want: "hello"},
		// "ab", then a match at offset 2 of 4+2 bytes: it overlaps itself.
		"overlapping match": {src: []byte{0x22, 'a', 'b', 0x02, 0x00, 0x10, '!'}, want: "abababab!"},
		// 15 + 3 literals, the extra length in a second byte.
		"long literals": {src: append([]byte{0xf0, 3}, "abcdefghijklmnopqr"...), want: "abcdefghijklmnopqr"},
		// "x", then a match at offset 1 of 4 + 15 + 255 + 1 bytes.
		"long match":     {src: []byte{0x1f, 'x', 0x01, 0x00, 255, 1, 0x10, '.'}, want: string(bytes.Repeat([]byte("x"), 1+4+15+255+1)) + "."},
		"offset zero":    {src: []byte{0x11, 'a', 0x00, 0x00}, err: "outside the block"},
		"offset too far": {src: []byte{0x11, 'a', 0x05, 0x00}, err: "outside the block"},
		"literals cut":   {src: []byte{0x50, 'h', 'i'}, err: "run past"},
		"offset cut":     {src: []byte{0x11, 'a', 0x01}, err: "offset is cut short"},
		"length cut":     {src: []byte{0xf0, 255}, err: "length is cut short"},
		"past the bound": {src: []byte{0x1f, 'x', 0x01, 0x00, 255, 255, 255, 255, 0}, err: "past its bound"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := lz4Block([]byte("prefix"), tc.src, 1000)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "prefix"+tc.want, string(got), "the block's matches never reach back before it")
		})
	}
}

// An image whose kernel has a PVH entry boots it; the bzImage stays beside
// it, and a kernel without one (the fake kernel of the other tests) boots
// as it is.
func TestEnsurePVHPointsTheImageAtTheELF(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	img := &Image{Kernel: dir + "/vmlinuz"}
	log := slog.New(slog.DiscardHandler)
	require.NoError(t, ensurePVH(context.Background(), img, bzImage(lz4Payload(testVmlinux(true))), log))
	assert.True(t, img.PVH)
	assert.Equal(t, dir+"/"+PVHKernelFile, img.Kernel)
	assert.Equal(t, img.Kernel, BootKernel(dir))

	other := t.TempDir()
	img = &Image{Kernel: other + "/vmlinuz"}
	require.NoError(t, ensurePVH(context.Background(), img, []byte("kernel"), log))
	assert.False(t, img.PVH)
	assert.Equal(t, other+"/vmlinuz", img.Kernel)
	assert.Equal(t, img.Kernel, BootKernel(other))
}

// No input panics the kernel unpacker: bzImage headers, payloads and ELF
// files as a kernel package could hold them.
func FuzzPVHKernel(f *testing.F) {
	f.Add(bzImage(lz4Payload(testVmlinux(true))))
	f.Add(bzImage(lz4Payload(testVmlinux(false))))
	f.Add(testVmlinux(true))
	f.Add([]byte{0x10, 'a', 0x01, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		if out, err := PVHKernel(context.Background(), b); err == nil {
			_, err := elf.NewFile(bytes.NewReader(out))
			require.NoError(t, err, "a PVH kernel made is an ELF file")
		}
		if out, err := pvhELF(b); err == nil {
			f, err := elf.NewFile(bytes.NewReader(b))
			require.NoError(t, err)
			// The same memory, compared where it fits in a test's memory.
			if lo, hi := loadSpan(f); hi-lo <= 16<<20 {
				assert.Equal(t, memoryImage(t, b), memoryImage(t, out))
			}
		}
		_, _ = unLZ4Legacy(append(append([]byte(nil), lz4LegacyMagic...), b...), 1<<16)
	})
}
