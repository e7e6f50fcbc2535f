package savedstart

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// A libvirt qemu save image (libvirt's src/qemu/qemu_saveimage.h, format
// version 2): a header of 16 magic bytes and 19 32-bit words in the host's
// order (data_len, was_running, compressed, the cookie's offset and unused
// words), then data_len bytes of data: the domain's definition, NUL, the
// migration cookie at its offset, NUL, zeros to pad; then QEMU's migration
// stream. libvirt pads the data to leave room for a longer definition, so a
// node's own fits in the template's without moving the stream.
const (
	saveMagic      = "LibvirtQemudSave"
	headerSize     = len(saveMagic) + 19*4
	saveVersion    = 2
	maxSaveDataLen = 16 << 20
)

// header is what bootlab reads of a save image's header and data.
type header struct {
	raw        []byte // the header's bytes, unused words included
	dataLen    uint32
	compressed uint32
	xml        []byte
	cookie     []byte
}

// parseHeader reads the header at the start of b and, when b holds them,
// its data. It refuses what bootlab cannot rewrite: another magic (a
// partial save is "LibvirtQemudPart"), another version, a compressed image.
func parseHeader(b []byte) (header, error) {
	if len(b) < headerSize || string(b[:len(saveMagic)]) != saveMagic {
		return header{}, errors.New("not a libvirt qemu save image (no LibvirtQemudSave header)")
	}
	word := func(i int) uint32 { return binary.LittleEndian.Uint32(b[len(saveMagic)+4*i:]) }
	h := header{raw: b[:headerSize:headerSize], dataLen: word(1), compressed: word(3)}
	if v := word(0); v != saveVersion {
		return header{}, fmt.Errorf("save image format version %d (bootlab reads %d)", v, saveVersion)
	}
	if h.compressed != 0 {
		return header{}, fmt.Errorf("save image is compressed (format %d): bootlab rewrites uncompressed ones", h.compressed)
	}
	if h.dataLen > maxSaveDataLen {
		return header{}, fmt.Errorf("save image data of %d bytes (at most %d)", h.dataLen, maxSaveDataLen)
	}
	if len(b) < headerSize+int(h.dataLen) {
		return header{}, fmt.Errorf("save image truncated: %d bytes of data, %d wanted", len(b)-headerSize, h.dataLen)
	}
	data := b[headerSize : headerSize+int(h.dataLen)]
	x, _, ok := bytes.Cut(data, []byte{0})
	if !ok || len(x) == 0 {
		return header{}, errors.New("save image holds no domain definition")
	}
	h.xml = x
	if off := word(4); off != 0 {
		if int64(off) >= int64(len(data)) {
			return header{}, fmt.Errorf("save image cookie at %d, past its %d bytes of data", off, len(data))
		}
		h.cookie, _, _ = bytes.Cut(data[off:], []byte{0})
	}
	return h, nil
}

// withXML returns the header and data of h with definition x instead of
// its own, the same length, so the migration stream stays where it is.
func (h header) withXML(x string) ([]byte, error) {
	if x == "" || bytes.IndexByte([]byte(x), 0) >= 0 {
		return nil, errors.New("a domain definition must be non-empty text")
	}
	need := len(x) + 1 + len(h.cookie) + 1
	if need > int(h.dataLen) {
		return nil, fmt.Errorf("definition of %d bytes does not fit the save image's %d", len(x), h.dataLen)
	}
	out := make([]byte, headerSize+int(h.dataLen))
	copy(out, h.raw)
	cookieOff := uint32(0)
	n := headerSize + copy(out[headerSize:], x) + 1
	if len(h.cookie) > 0 {
		cookieOff = uint32(n - headerSize)
		copy(out[n:], h.cookie)
	}
	binary.LittleEndian.PutUint32(out[len(saveMagic)+4*4:], cookieOff)
	return out, nil
}

// readHeader reads the header and data of the save image f.
func readHeader(f *os.File) (header, error) {
	head := make([]byte, headerSize)
	if _, err := io.ReadFull(f, head); err != nil {
		return header{}, fmt.Errorf("read save image %s: %w", f.Name(), err)
	}
	n := binary.LittleEndian.Uint32(head[len(saveMagic)+4:])
	if n > maxSaveDataLen {
		n = 0 // parseHeader says what is wrong
	}
	all := make([]byte, headerSize+int(n))
	copy(all, head)
	if _, err := io.ReadFull(f, all[headerSize:]); err != nil {
		return header{}, fmt.Errorf("read save image %s: %w", f.Name(), err)
	}
	h, err := parseHeader(all)
	if err != nil {
		return header{}, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return h, nil
}

// streamImage writes to w the save image src with its header naming the
// domain of definition x: the image a node is restored from, fed to
// libvirt through a pipe (feedImage), never written to disk.
func streamImage(src string, w io.Writer, x string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	h, err := readHeader(in)
	if err != nil {
		return err
	}
	head, err := h.withXML(x)
	if err != nil {
		return err
	}
	if _, err := w.Write(head); err != nil {
		return err
	}
	// in is at the stream's offset: the rest goes as it is.
	_, err = io.Copy(w, in)
	return err
}
