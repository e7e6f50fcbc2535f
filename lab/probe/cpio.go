package probe

import (
	"fmt"
	"io"
	"path"
	"strings"
)

// CPIOWriter writes a newc ("070701") cpio archive, the format the kernel
// unpacks as an initramfs. It writes what it is given, in order: parents
// must come before their children. It is kept rather than
// github.com/cavaliergopher/cpio v1.0.1, which writes no device numbers
// (rdevmajor/rdevminor): the initramfs needs /dev/console and /dev/null.
type CPIOWriter struct {
	w   io.Writer
	ino uint32
	err error
}

// NewCPIOWriter returns a writer on w.
func NewCPIOWriter(w io.Writer) *CPIOWriter { return &CPIOWriter{w: w, ino: 1} }

// File modes of cpio entries (the S_IF* bits).
const (
	cpioDir  = 0o040000
	cpioFile = 0o100000
	cpioChar = 0o020000
	cpioLink = 0o120000
)

// Dir adds a directory.
func (c *CPIOWriter) Dir(name string, perm uint32) error {
	return c.entry(name, cpioDir|perm, 2, 0, 0, nil)
}

// File adds a regular file.
func (c *CPIOWriter) File(name string, perm uint32, data []byte) error {
	return c.entry(name, cpioFile|perm, 1, 0, 0, data)
}

// CharDev adds a character device node.
func (c *CPIOWriter) CharDev(name string, perm, major, minor uint32) error {
	return c.entry(name, cpioChar|perm, 1, major, minor, nil)
}

// Symlink adds a symbolic link.
func (c *CPIOWriter) Symlink(name, target string) error {
	return c.entry(name, cpioLink|0o777, 1, 0, 0, []byte(target))
}

// Close writes the trailer. It does not close the underlying writer.
func (c *CPIOWriter) Close() error {
	if c.err != nil {
		return c.err
	}
	return c.raw("TRAILER!!!", 0, 1, 0, 0, 0, nil)
}

func (c *CPIOWriter) entry(name string, mode, nlink, major, minor uint32, data []byte) error {
	if c.err != nil {
		return c.err
	}
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	if name == "" {
		return fmt.Errorf("cpio: empty name")
	}
	c.ino++
	c.err = c.raw(name, c.ino, nlink, major, minor, mode, data)
	return c.err
}

func (c *CPIOWriter) raw(name string, ino, nlink, rmajor, rminor, mode uint32, data []byte) error {
	hdr := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rmajor, rminor, len(name)+1, 0)
	buf := make([]byte, 0, len(hdr)+len(name)+4+len(data)+4)
	buf = append(buf, hdr...)
	buf = append(buf, name...)
	buf = append(buf, 0)
	buf = pad4(buf)
	buf = append(buf, data...)
	buf = pad4(buf)
	_, err := c.w.Write(buf)
	return err
}

// pad4 pads to a multiple of 4 bytes; every header+name and every body
// starts 4-aligned because each entry is written padded in one piece.
func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}
