package stages

import (
	"bytes"
	"io"
	"sync"
)

// prefixWriter writes every complete line to each of its writers with a
// prefix, and keeps the last few lines for error messages.
type prefixWriter struct {
	mu     sync.Mutex
	prefix []byte
	outs   []io.Writer
	buf    []byte
	tail   []string
	keep   int
}

func newPrefixWriter(prefix string, keep int, outs ...io.Writer) *prefixWriter {
	var ws []io.Writer
	for _, w := range outs {
		if w != nil {
			ws = append(ws, w)
		}
	}
	return &prefixWriter{prefix: []byte(prefix), outs: ws, keep: keep}
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		p.emit(p.buf[:i])
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}

func (p *prefixWriter) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	out := make([]byte, 0, len(p.prefix)+len(line)+1)
	out = append(append(append(out, p.prefix...), line...), '\n')
	for _, w := range p.outs {
		_, _ = w.Write(out)
	}
	p.tail = append(p.tail, string(line))
	if len(p.tail) > p.keep {
		p.tail = p.tail[len(p.tail)-p.keep:]
	}
}

// Flush emits a last line without a newline.
func (p *prefixWriter) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		p.emit(p.buf)
		p.buf = nil
	}
}

// Tail returns the last lines written.
func (p *prefixWriter) Tail() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.tail...)
}
