package savedstart

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testCookie = "<cookie>\n  <cpu mode='custom'/>\n</cookie>\n"

// saveImage builds a save image as libvirt 9 writes one: the header, the
// definition and cookie padded to dataLen, then stream.
func saveImage(t testing.TB, x, cookie string, dataLen int, stream []byte) []byte {
	t.Helper()
	b := make([]byte, headerSize+dataLen)
	copy(b, saveMagic)
	w := func(i int, v uint32) { binary.LittleEndian.PutUint32(b[len(saveMagic)+4*i:], v) }
	w(0, saveVersion)
	w(1, uint32(dataLen))
	w(2, 1) // was running
	n := copy(b[headerSize:], x) + 1
	if cookie != "" {
		w(4, uint32(n))
		copy(b[headerSize+n:], cookie)
	}
	return append(b, stream...)
}

func TestParseHeaderReadsDefinitionAndCookie(t *testing.T) {
	img := saveImage(t, "<domain><name>a</name></domain>", testCookie, 4096, []byte("QEVM"))
	h, err := parseHeader(img)
	require.NoError(t, err)
	assert.Equal(t, "<domain><name>a</name></domain>", string(h.xml))
	assert.Equal(t, testCookie, string(h.cookie))
	assert.EqualValues(t, 4096, h.dataLen)
}

func TestParseHeaderRefusesWhatItCannotRewrite(t *testing.T) {
	good := saveImage(t, "<domain/>", testCookie, 1024, nil)
	set := func(b []byte, word int, v uint32) []byte {
		c := bytes.Clone(b)
		binary.LittleEndian.PutUint32(c[len(saveMagic)+4*word:], v)
		return c
	}
	partial := bytes.Clone(good)
	copy(partial, "LibvirtQemudPart")
	for name, tc := range map[string]struct {
		img  []byte
		want string
	}{
		"empty":         {nil, "not a libvirt qemu save image"},
		"partial save":  {partial, "not a libvirt qemu save image"},
		"version 3":     {set(good, 0, 3), "format version 3"},
		"compressed":    {set(good, 3, 1), "compressed"},
		"huge data":     {set(good, 1, maxSaveDataLen+1), "at most"},
		"truncated":     {good[:headerSize+10], "truncated"},
		"cookie beyond": {set(good, 4, 5000), "past its"},
		"no definition": {saveImage(t, "", "", 64, nil), "no domain definition"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseHeader(tc.img)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestWithXMLKeepsTheStreamWhereItIs(t *testing.T) {
	img := saveImage(t, "<domain><name>template</name></domain>", testCookie, 2048, nil)
	h, err := parseHeader(img)
	require.NoError(t, err)
	longer := "<domain><name>bootlab-lab-master-0</name><uuid>u</uuid></domain>"
	out, err := h.withXML(longer)
	require.NoError(t, err)
	assert.Len(t, out, len(img), "header and data keep their length")
	h2, err := parseHeader(out)
	require.NoError(t, err)
	assert.Equal(t, longer, string(h2.xml))
	assert.Equal(t, testCookie, string(h2.cookie), "the cookie moves along")

	_, err = h.withXML(strings.Repeat("x", 2048))
	assert.ErrorContains(t, err, "does not fit")
	_, err = h.withXML("a\x00b")
	assert.Error(t, err)
}

func TestStreamImageSendsTheStreamUnderANewHeader(t *testing.T) {
	dir := t.TempDir()
	stream := bytes.Repeat([]byte("QEVM-stream-"), 100000)
	src := filepath.Join(dir, "template.img")
	require.NoError(t, os.WriteFile(src, saveImage(t, "<domain><name>t</name></domain>", testCookie, 65536, stream), 0o600))

	var got bytes.Buffer
	require.NoError(t, streamImage(src, &got, "<domain><name>node</name></domain>"))
	h, err := parseHeader(got.Bytes())
	require.NoError(t, err)
	assert.Equal(t, "<domain><name>node</name></domain>", string(h.xml))
	assert.Equal(t, stream, got.Bytes()[headerSize+65536:], "the migration stream goes as it was")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.img"), []byte("not an image"), 0o600))
	got.Reset()
	err = streamImage(filepath.Join(dir, "bad.img"), &got, "<domain/>")
	assert.ErrorContains(t, err, "read save image")
	assert.Zero(t, got.Len(), "nothing is sent of an image that does not parse")
}

// FuzzParseHeader: no input panics, and whatever parses takes another
// definition and reads back with it.
func FuzzParseHeader(f *testing.F) {
	f.Add(saveImage(f, "<domain/>", testCookie, 512, []byte("QEVM")))
	f.Add(saveImage(f, "<domain/>", "", 64, nil))
	f.Add([]byte(saveMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseHeader(b)
		if err != nil {
			return
		}
		out, err := h.withXML("<domain><name>n</name></domain>")
		if err != nil {
			return // too small to take it
		}
		h2, err := parseHeader(out)
		if err != nil {
			t.Fatalf("a rewritten header does not parse: %v", err)
		}
		if string(h2.xml) != "<domain><name>n</name></domain>" || !bytes.Equal(h2.cookie, h.cookie) {
			t.Fatalf("rewrite lost something: %q %q", h2.xml, h2.cookie)
		}
	})
}
