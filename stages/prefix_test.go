package stages

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLineSinkKeepsStreamsApartAndPrefixes(t *testing.T) {
	t.Parallel()
	var out, log bytes.Buffer
	sink := newLineSink("[07 etcd-bootstrap] ", 2, &out, nil, &log)
	stdout, stderr := sink.Stream(), sink.Stream()
	_, _ = stdout.Write([]byte("Rendering "))
	_, _ = stderr.Write([]byte("warning: slow\n"))
	_, _ = stdout.Write([]byte("CEO Manifests...\r\nsecond\nno newline"))
	stdout.Flush()
	stderr.Flush()
	want := "[07 etcd-bootstrap] warning: slow\n[07 etcd-bootstrap] Rendering CEO Manifests...\n[07 etcd-bootstrap] second\n[07 etcd-bootstrap] no newline\n"
	assert.Equal(t, want, out.String())
	assert.Equal(t, want, log.String())
	assert.Equal(t, []string{"second", "no newline"}, sink.Tail())
}
