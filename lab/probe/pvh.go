package probe

import (
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A probe node boots its kernel directly. Given a compressed kernel
// (bzImage), QEMU's firmware runs the kernel's real-mode setup and the
// kernel then decompresses itself, all of it emulated instruction by
// instruction under TCG. Given the uncompressed kernel as an ELF file with
// a PVH entry point (the Xen note XEN_ELFNOTE_PHYS32_ENTRY, present when
// the kernel is built with CONFIG_PVH, as Debian's, Ubuntu's and Fedora's
// are), QEMU loads the segments itself and starts the kernel at that entry
// in 32-bit protected mode: no setup code, no decompression. A probe
// node's boot to its agent's modules took 1.40 to 1.50 CPU s against 1.74
// to 1.78 s (docs/benchmarks.md, twenty-fifth round).
//
// PVHKernel makes that ELF from a bzImage: it finds the payload from the
// boot protocol header, decompresses it and writes a smaller ELF holding
// only the loadable segments (long runs of zeros left out: the loader
// zero-fills a segment's memory past its file bytes) and the notes.

// ErrNoPVH is returned (wrapped) for a kernel that cannot boot through PVH
// or whose payload bootlab cannot unpack: the image then keeps the bzImage.
var ErrNoPVH = errors.New("no PVH kernel")

// xenNotePhys32Entry is XEN_ELFNOTE_PHYS32_ENTRY, the PVH entry point note.
const xenNotePhys32Entry = 18

// maxVmlinuxBytes bounds a decompressed kernel: Debian's is about 50 MiB.
const maxVmlinuxBytes = 512 << 20

// zeroRunBytes is the shortest run of zero pages left out of the ELF.
const zeroRunBytes = 64 << 10

// maxSegments bounds the written ELF's program headers (Debian's kernel
// makes 11); an ELF has room for 65535.
const maxSegments = 1024

// PVHKernel returns the PVH-bootable ELF of the bzImage bz, or an error
// wrapping ErrNoPVH saying why there is none.
func PVHKernel(ctx context.Context, bz []byte) ([]byte, error) {
	payload, err := bzPayload(bz)
	if err != nil {
		return nil, err
	}
	vmlinux, err := decompressKernel(ctx, payload)
	if err != nil {
		return nil, err
	}
	return pvhELF(vmlinux)
}

// bzPayload is the compressed kernel inside a bzImage (boot protocol 2.08
// and later record where it is).
func bzPayload(bz []byte) ([]byte, error) {
	if len(bz) < 0x250 || string(bz[0x202:0x206]) != "HdrS" {
		return nil, fmt.Errorf("%w: not a bzImage (no HdrS boot header)", ErrNoPVH)
	}
	if v := binary.LittleEndian.Uint16(bz[0x206:]); v < 0x208 {
		return nil, fmt.Errorf("%w: boot protocol %d.%02d records no payload (2.08 or later does)", ErrNoPVH, v>>8, v&0xff)
	}
	setup := int(bz[0x1f1])
	if setup == 0 {
		setup = 4
	}
	start := uint64(setup+1)*512 + uint64(binary.LittleEndian.Uint32(bz[0x248:]))
	end := start + uint64(binary.LittleEndian.Uint32(bz[0x24c:]))
	if end > uint64(len(bz)) || end-start < 8 {
		return nil, fmt.Errorf("%w: the payload (bytes %d to %d) is not inside the %d-byte bzImage", ErrNoPVH, start, end, len(bz))
	}
	return bz[start:end], nil
}

// decompressKernel unpacks a bzImage payload: gzip and LZ4 here, xz and
// zstd with their commands when installed. Every format but gzip ends
// with the uncompressed size (the kernel build's size_append), which the
// result must match.
func decompressKernel(ctx context.Context, p []byte) ([]byte, error) {
	if bytes.HasPrefix(p, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(p))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip payload: %v", ErrNoPVH, err)
		}
		zr.Multistream(false)
		out, err := io.ReadAll(io.LimitReader(zr, maxVmlinuxBytes+1))
		if err == nil && len(out) > maxVmlinuxBytes {
			err = errors.New("larger than 512 MiB")
		}
		if err != nil {
			return nil, fmt.Errorf("%w: gzip payload: %v", ErrNoPVH, err)
		}
		return out, nil
	}
	body, size := p[:len(p)-4], int(binary.LittleEndian.Uint32(p[len(p)-4:]))
	if size > maxVmlinuxBytes {
		return nil, fmt.Errorf("%w: the payload says it unpacks to %d bytes, more than 512 MiB", ErrNoPVH, size)
	}
	var out []byte
	var err error
	switch {
	case bytes.HasPrefix(body, lz4LegacyMagic):
		out, err = unLZ4Legacy(body, size)
	case bytes.HasPrefix(body, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		out, err = unpackWith(ctx, "the kernel's payload", bytes.NewReader(body), "xz")
	case bytes.HasPrefix(body, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		out, err = unpackWith(ctx, "the kernel's payload", bytes.NewReader(body), "zstd")
	default:
		return nil, fmt.Errorf("%w: the payload's compression (first bytes % x) is not gzip, LZ4, xz or zstd", ErrNoPVH, body[:min(4, len(body))])
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoPVH, err)
	}
	if len(out) != size {
		return nil, fmt.Errorf("%w: the payload unpacked to %d bytes, its trailer says %d", ErrNoPVH, len(out), size)
	}
	return out, nil
}

// lz4LegacyMagic starts LZ4's legacy frame (lz4 -l), the kernel's LZ4.
var lz4LegacyMagic = []byte{0x02, 0x21, 0x4c, 0x18}

// lz4LegacyBlock is the most a legacy frame's block unpacks to.
const lz4LegacyBlock = 8 << 20

// unLZ4Legacy unpacks a legacy LZ4 frame: the magic, then blocks, each a
// little-endian compressed length and an LZ4 block of at most 8 MiB.
func unLZ4Legacy(p []byte, size int) ([]byte, error) {
	out := make([]byte, 0, size)
	p = p[len(lz4LegacyMagic):]
	for len(p) > 0 {
		if len(p) < 4 {
			return nil, errors.New("lz4: a block length is cut short")
		}
		n := binary.LittleEndian.Uint32(p)
		p = p[4:]
		if bytes.Equal(binary.LittleEndian.AppendUint32(nil, n), lz4LegacyMagic) {
			continue // a second frame of the same stream
		}
		if uint64(n) > uint64(len(p)) {
			return nil, fmt.Errorf("lz4: a block of %d bytes with %d left", n, len(p))
		}
		var err error
		if out, err = lz4Block(out, p[:n], min(lz4LegacyBlock, size-len(out))); err != nil {
			return nil, err
		}
		p = p[n:]
	}
	return out, nil
}

// lz4Block appends the decoding of the LZ4 block src to dst, failing if it
// would add more than limit bytes.
func lz4Block(dst, src []byte, limit int) ([]byte, error) {
	base := len(dst)
	length := func(n int, src []byte) (int, []byte, error) {
		if n != 15 {
			return n, src, nil
		}
		for {
			if len(src) == 0 {
				return 0, nil, errors.New("lz4: a length is cut short")
			}
			b := src[0]
			src = src[1:]
			n += int(b)
			if n > limit {
				return 0, nil, errors.New("lz4: a block unpacks past its bound")
			}
			if b != 255 {
				return n, src, nil
			}
		}
	}
	for len(src) > 0 {
		token := src[0]
		lit, rest, err := length(int(token>>4), src[1:])
		if err != nil {
			return nil, err
		}
		if lit > len(rest) || len(dst)-base+lit > limit {
			return nil, errors.New("lz4: literals run past the block")
		}
		dst = append(dst, rest[:lit]...)
		src = rest[lit:]
		if len(src) == 0 {
			return dst, nil // the last sequence has literals only
		}
		if len(src) < 2 {
			return nil, errors.New("lz4: a match offset is cut short")
		}
		off := int(binary.LittleEndian.Uint16(src))
		ml, rest, err := length(int(token&15), src[2:])
		if err != nil {
			return nil, err
		}
		src = rest
		ml += 4
		if off == 0 || off > len(dst)-base || len(dst)-base+ml > limit {
			return nil, errors.New("lz4: a match outside the block")
		}
		for i, from := 0, len(dst)-off; i < ml; i++ { // may overlap itself
			dst = append(dst, dst[from+i])
		}
	}
	return dst, nil
}

// pvhELF checks that vmlinux is an x86-64 ELF kernel with a PVH entry and
// returns it rewritten with only its loadable bytes and notes.
func pvhELF(vmlinux []byte) ([]byte, error) {
	f, err := elf.NewFile(bytes.NewReader(vmlinux))
	if err != nil {
		return nil, fmt.Errorf("%w: the unpacked kernel is not an ELF file: %v", ErrNoPVH, err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC {
		return nil, fmt.Errorf("%w: the unpacked kernel is %v %v %v, not a 64-bit x86 executable", ErrNoPVH, f.Class, f.Machine, f.Type)
	}
	var loads []segment
	var notes [][]byte
	for _, p := range f.Progs {
		if p.Filesz > p.Memsz || p.Off+p.Filesz > uint64(len(vmlinux)) || p.Off+p.Filesz < p.Off {
			return nil, fmt.Errorf("%w: a segment at file offset %d runs past the kernel's %d bytes", ErrNoPVH, p.Off, len(vmlinux))
		}
		data := vmlinux[p.Off : p.Off+p.Filesz]
		switch p.Type {
		case elf.PT_LOAD:
			loads = append(loads, splitZeros(segment{paddr: p.Paddr, vaddr: p.Vaddr, flags: p.Flags, data: data, memsz: p.Memsz})...)
		case elf.PT_NOTE:
			notes = append(notes, data)
		}
	}
	if !hasPVHNote(notes) {
		return nil, fmt.Errorf("%w: the kernel has no PVH entry note (built without CONFIG_PVH)", ErrNoPVH)
	}
	if len(loads) == 0 || len(loads)+len(notes) > maxSegments {
		return nil, fmt.Errorf("%w: the kernel has %d loadable segments (1 to %d with its notes)", ErrNoPVH, len(loads), maxSegments)
	}
	return writeELF(f.Entry, loads, notes), nil
}

// hasPVHNote says whether the notes hold Xen's PVH entry point.
func hasPVHNote(notes [][]byte) bool {
	for _, n := range notes {
		for len(n) >= 12 {
			namesz := uint64(binary.LittleEndian.Uint32(n))
			descsz := uint64(binary.LittleEndian.Uint32(n[4:]))
			typ := binary.LittleEndian.Uint32(n[8:])
			nameEnd := 12 + (namesz+3)&^3
			end := nameEnd + (descsz+3)&^3
			if end > uint64(len(n)) || namesz > uint64(len(n)) || descsz > uint64(len(n)) {
				break
			}
			if typ == xenNotePhys32Entry && string(bytes.TrimRight(n[12:12+namesz], "\x00")) == "Xen" && descsz >= 4 {
				return true
			}
			n = n[end:]
		}
	}
	return false
}

// segment is one PT_LOAD of the written ELF.
type segment struct {
	paddr, vaddr, memsz uint64
	flags               elf.ProgFlag
	data                []byte
}

// splitZeros cuts a segment at every run of zero pages of zeroRunBytes or
// more, each piece keeping in memory the zeros that follow it; the last
// piece drops its trailing zeros the same way.
func splitZeros(s segment) []segment {
	const page = 4096
	var out []segment
	start := uint64(0) // of the current piece, within s
	n := uint64(len(s.data))
	for off := uint64(0); off < n; {
		if !zeroPage(s.data, off) {
			off += page
			continue
		}
		run := off
		for run < n && zeroPage(s.data, run) {
			run += page
		}
		if run-off >= zeroRunBytes && run < n {
			out = append(out, piece(s, start, off, run))
			start = run
		}
		off = run
	}
	end := n
	for end > start && s.data[end-1] == 0 {
		end--
	}
	return append(out, piece(s, start, end, s.memsz))
}

func zeroPage(b []byte, off uint64) bool {
	end := min(off+4096, uint64(len(b)))
	for _, c := range b[off:end] {
		if c != 0 {
			return false
		}
	}
	return true
}

// piece is s's bytes [start, end) loaded at start, its memory running to memEnd.
func piece(s segment, start, end, memEnd uint64) segment {
	return segment{paddr: s.paddr + start, vaddr: s.vaddr + start, flags: s.flags, data: s.data[start:end], memsz: memEnd - start}
}

// writeELF lays out an ELF64 executable: the header, the program headers
// (the loads, then one PT_NOTE per note block), the loads' bytes each at
// an offset congruent to its address modulo the page, then the notes.
func writeELF(entry uint64, loads []segment, notes [][]byte) []byte {
	const ehsize, phsize, page = 64, 56, 4096
	phnum := len(loads) + len(notes)
	type ph struct {
		typ, flags                 uint32
		off, vaddr, paddr, fsz, ms uint64
		align                      uint64
	}
	phs := make([]ph, 0, phnum)
	off := uint64(ehsize + phsize*phnum)
	for _, l := range loads {
		off = (off+page-1)&^(page-1) + l.vaddr%page
		phs = append(phs, ph{uint32(elf.PT_LOAD), uint32(l.flags), off, l.vaddr, l.paddr, uint64(len(l.data)), l.memsz, page})
		off += uint64(len(l.data))
	}
	for _, n := range notes {
		off = (off + 3) &^ 3
		phs = append(phs, ph{uint32(elf.PT_NOTE), uint32(elf.PF_R), off, 0, 0, uint64(len(n)), uint64(len(n)), 4})
		off += uint64(len(n))
	}
	out := make([]byte, off)
	copy(out, []byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)})
	le := binary.LittleEndian
	le.PutUint16(out[16:], uint16(elf.ET_EXEC))
	le.PutUint16(out[18:], uint16(elf.EM_X86_64))
	le.PutUint32(out[20:], uint32(elf.EV_CURRENT))
	le.PutUint64(out[24:], entry)
	le.PutUint64(out[32:], ehsize) // e_phoff; e_shoff stays 0: no sections
	le.PutUint16(out[52:], ehsize)
	le.PutUint16(out[54:], phsize)
	le.PutUint16(out[56:], uint16(phnum))
	le.PutUint16(out[58:], 64) // e_shentsize
	for i, p := range phs {
		b := out[ehsize+phsize*i:]
		le.PutUint32(b, p.typ)
		le.PutUint32(b[4:], p.flags)
		le.PutUint64(b[8:], p.off)
		le.PutUint64(b[16:], p.vaddr)
		le.PutUint64(b[24:], p.paddr)
		le.PutUint64(b[32:], p.fsz)
		le.PutUint64(b[40:], p.ms)
		le.PutUint64(b[48:], p.align)
		if i < len(loads) {
			copy(out[p.off:], loads[i].data)
		} else {
			copy(out[p.off:], notes[i-len(loads)])
		}
	}
	return out
}
