package diagnose

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/userfile"
)

// rawTar is a tar of the given entries (name -> content; a name ending in
// / is a directory), gzip'd when zip is set.
func rawTar(t testing.TB, zip bool, entries ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w = &buf
	var zw *gzip.Writer
	tw := tar.NewWriter(w)
	if zip {
		zw = gzip.NewWriter(w)
		tw = tar.NewWriter(zw)
	}
	for i := 0; i+1 < len(entries); i += 2 {
		name, body := entries[i], entries[i+1]
		h := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}
		if strings.HasSuffix(name, "/") {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		require.NoError(t, tw.WriteHeader(h))
		if h.Typeflag == tar.TypeReg {
			_, err := tw.Write([]byte(body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	if zw != nil {
		require.NoError(t, zw.Close())
	}
	return buf.Bytes()
}

func read(t testing.TB, data []byte, lim Limits) (*Bundle, error) {
	t.Helper()
	return ReadBundleFrom(context.Background(), bytes.NewReader(data), "given.tar.gz", lim)
}

// A file that is no bundle is refused with an error that names it and
// says what a bundle is, never quoting the file (a learner who points
// --bundle at /etc/shadow must not see it printed).
func TestReadBundleRefusesWhatIsNoBundle(t *testing.T) {
	t.Parallel()
	secret := "root:$6$ZmFrZWhhc2hzYWx0$c2VjcmV0:19000:0:99999:7:::"
	cases := map[string]struct {
		data []byte
		want string
	}{
		"a text file":          {[]byte(secret + "\n"), "is neither a .tar.gz nor a .tar (its content is not shown)"},
		"empty":                {nil, "is neither a .tar.gz nor a .tar"},
		"gzip of no tar":       {gzipOf(t, secret), "is gzip'd but holds no tar archive"},
		"a tar of something":   {rawTar(t, true, "etc/shadow", secret, "notes.txt", "hello"), "is an archive but no log bundle: it has no bootstrap/, control-plane/ or resources/ directory"},
		"a climbing entry":     {rawTar(t, true, "log-bundle-1/bootstrap/journals/x.log", "a", "../../etc/cron.d/x", secret), "has an entry whose path climbs out of the archive"},
		"an absolute entry":    {rawTar(t, false, "/etc/passwd", secret), "has an entry whose path climbs out of the archive"},
		"cut short":            {cutShort(t), "is cut short or damaged"},
		"a plain tar, no dirs": {rawTar(t, false, "README", "x"), "no log bundle"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := read(t, c.data, DefaultLimits())
			require.Error(t, err)
			var be *BundleError
			require.True(t, errors.As(err, &be), "%T: %v", err, err)
			assert.Contains(t, err.Error(), "given.tar.gz: ")
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "c2VjcmV0")
			assert.NotContains(t, err.Error(), "root:")
		})
	}
}

// cutShort is a bundle cut in the middle of its first file.
func cutShort(t testing.TB) []byte {
	var log strings.Builder
	for i := 0; i < 5000; i++ {
		log.WriteString("line " + strconv.Itoa(i*7919%10007) + "\n")
	}
	data := rawTar(t, true, "bootstrap/journals/bootkube.log", log.String())
	return data[:len(data)/2]
}

func gzipOf(t testing.TB, s string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write([]byte(s + strings.Repeat("\n", 600)))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// A bundle that unpacks to more than the limit (a gzip bomb) stops there.
func TestReadBundleStopsAtTheArchiveLimit(t *testing.T) {
	t.Parallel()
	data := rawTar(t, true, "bootstrap/journals/kubelet.log", strings.Repeat("x", 1<<20))
	lim := DefaultLimits()
	lim.Archive = 64 << 10
	_, err := read(t, data, lim)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unpacks to more than the limit of a log bundle")
	lim = DefaultLimits()
	lim.Entries = 1
	_, err = read(t, rawTar(t, true, "bootstrap/", "", "bootstrap/journals/kubelet.log", "x"), lim)
	assert.ErrorContains(t, err, "has more than 1 entries")
}

// Only what a check reads is kept: logs, records, a few API objects,
// certificates; never the rendered manifests, secrets' names, inspect
// output (its environment may hold a secret) or the whole journal.
func TestReadBundleKeepsOnlyWhatChecksRead(t *testing.T) {
	t.Parallel()
	b, err := read(t, rawTar(t, true,
		"log-bundle-20250514103000/", "",
		"log-bundle-20250514103000/bootstrap/journals/bootkube.log", "May 14 10:00:00 b bootkube.sh[1]: hi\n",
		"log-bundle-20250514103000/bootstrap/journals/journal.log.gz", "x",
		"log-bundle-20250514103000/bootstrap/containers/etcd-0123456789abcdef.log", "{}\n",
		"log-bundle-20250514103000/bootstrap/containers/etcd-0123456789abcdef.inspect", `{"env":["PASSWORD=x"]}`,
		"log-bundle-20250514103000/bootstrap/services/bootkube.json", "[]",
		"log-bundle-20250514103000/rendered-assets/openshift/tls/root-ca.crt", "-----BEGIN CERTIFICATE-----",
		"log-bundle-20250514103000/rendered-assets/openshift/manifests/pull-secret.yaml", "auths",
		"log-bundle-20250514103000/resources/csr.json", `{"items":[]}`,
		"log-bundle-20250514103000/resources/secrets-names-with-annotations.txt", "kube-system x",
		"log-bundle-20250514103000/control-plane/10.0.0.11/journals/kubelet.log", "a\n",
		"log-bundle-20250514103000/control-plane/10.0.0.12/", "",
		"log-bundle-20250514103000/serial/bootstrap.log", "console",
	), DefaultLimits())
	require.NoError(t, err)
	assert.Equal(t, "20250514103000", b.ID)
	var kept []string
	for rel := range b.files {
		kept = append(kept, rel)
	}
	assert.ElementsMatch(t, []string{"bootstrap/journals/bootkube.log", "bootstrap/containers/etcd-0123456789abcdef.log",
		"bootstrap/services/bootkube.json", "rendered-assets/openshift/tls/root-ca.crt", "resources/csr.json",
		"control-plane/10.0.0.11/journals/kubelet.log"}, kept)
	assert.Equal(t, []string{"10.0.0.11", "10.0.0.12"}, b.Dirs("control-plane"))
	assert.Equal(t, "log-bundle-20250514103000/bootstrap/journals/bootkube.log", b.File("bootstrap/journals/bootkube.log").Name)
}

// A log longer than the limit keeps its tail, numbered as in the file,
// and the diagnosis says what it did not read.
func TestReadBundleKeepsTheTailOfALongLog(t *testing.T) {
	t.Parallel()
	var log strings.Builder
	for i := 1; i <= 10000; i++ {
		log.WriteString("May 14 10:00:00 bootstrap kubelet[1]: line " + itoa(i) + "\n")
	}
	lim := DefaultLimits()
	lim.File = 4 << 10
	b, err := read(t, rawTar(t, true, "bootstrap/journals/kubelet.log", log.String()), lim)
	require.NoError(t, err)
	ls := b.File("bootstrap/journals/kubelet.log").Lines(2025)
	require.NotEmpty(t, ls)
	last := ls[len(ls)-1]
	assert.Equal(t, 10000, last.N)
	assert.True(t, strings.HasSuffix(last.Text, "line 10000"))
	assert.True(t, strings.HasSuffix(ls[0].Text, "line "+itoa(ls[0].N)), "line numbers are the file's: %d %q", ls[0].N, ls[0].Text)
	require.Len(t, b.Notes(), 1)
	assert.Contains(t, b.Notes()[0], "bootstrap/journals/kubelet.log: only its last 4 KiB were read")
	// A JSON file over the limit is not read at all: half a list is no list.
	b, err = read(t, rawTar(t, true, "resources/csr.json", `{"items":[`+strings.Repeat(`{},`, 3000)+`{}]}`), lim)
	require.NoError(t, err)
	assert.Nil(t, b.File("resources/csr.json"))
	assert.Contains(t, strings.Join(b.Notes(), "\n"), "resources/csr.json: not read")
}

func itoa(i int) string { return strconv.Itoa(i) }

// ReadBundle reads a bundle file a user names through internal/userfile:
// a missing file or a directory is a userfile.Error naming it.
func TestReadBundleFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "log-bundle-20250514103000.tar.gz")
	require.NoError(t, os.WriteFile(p, healthy(t).tarGz(t), 0o600))
	b, err := ReadBundle(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, p, b.Source)
	for _, bad := range []string{filepath.Join(dir, "missing.tar.gz"), dir} {
		_, err := ReadBundle(context.Background(), bad)
		var ue *userfile.Error
		assert.True(t, errors.As(err, &ue), "%v", err)
	}
}

// A live collector fills a bundle with Add; a path that climbs out is refused.
func TestBundleAdd(t *testing.T) {
	t.Parallel()
	b := NewBundle("lab demo")
	require.NoError(t, b.Add("bootstrap/journals/bootkube.log", "", []byte("x\n")))
	assert.Equal(t, "bootstrap/journals/bootkube.log", b.File("bootstrap/journals/bootkube.log").Name)
	for _, bad := range []string{"../x", "/etc/x", "a/../../x", "", "a//b"} {
		assert.Error(t, b.Add(bad, "", nil), bad)
	}
}

// A diagnosis prints log lines, which may hold a secret: tokens,
// passwords, a pull secret's auth, private keys, a terminal's escapes are
// never printed; digests and ids stay readable.
func TestShownHidesSecrets(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`curl -H "Authorization: Bearer sha256~abcDEF123_-x" https://x`:                   `curl -H "Authorization: Bearer …" https://x`,
		`level=info msg="login" password=hunter2 user=core`:                               `level=info msg="login" password=… user=core`,
		`{"auths":{"quay.io":{"auth":"Y29yZTpzZWNyZXQ=","email":"x"}}}`:                   `{"auths":{"quay.io":{"auth":"…","email":"x"}}}`,
		`token: eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiJzeXN0ZW0ifQ.c2ln`:           `token: …`,
		`got eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJl here`: `got … (a token, hidden) here`,
		"-----BEGIN RSA PRIVATE KEY-----MIIEow":                                           "-----BEGIN … PRIVATE KEY----- (hidden)",
		"blob " + strings.Repeat("QUJDZGVm", 12) + " end":                                 "blob … (hidden) end",
		"image@sha256:" + strings.Repeat("ab12", 16):                                      "image@sha256:" + strings.Repeat("ab12", 16),
		"red \x1b[31mtext\x1b[0m\r":                                                       "red �[31mtext�[0m�",
	}
	for in, want := range cases {
		assert.Equal(t, want, Shown(in), "%q", in)
	}
	assert.Len(t, []rune(Shown(strings.Repeat("é", 1000))), maxShown+1)
}
