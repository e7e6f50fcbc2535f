package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/bootlab/bootlab/internal/sshc"
)

// ScriptRunner is a node that writes a script and runs it in one command:
// over SSH every command is a session, a sudo and a bash on the node.
type ScriptRunner interface {
	RunScript(ctx context.Context, path string, script []byte, stdout, stderr io.Writer) (int, error)
}

// RunScript writes script to path on n (mode 0700) and runs it with bash,
// its stdin /dev/null (a command in it that reads stdin must not eat
// anything), streaming its output; the script's exit code is returned
// with a nil error. The file stays for the learner to read and rerun. A
// node that is a ScriptRunner does both in one command.
func RunScript(ctx context.Context, n Node, path string, script []byte, stdout, stderr io.Writer) (int, error) {
	if sr, ok := n.(ScriptRunner); ok {
		return sr.RunScript(ctx, path, script, stdout, stderr)
	}
	if err := n.WriteFile(ctx, path, script, 0o700); err != nil {
		return -1, err
	}
	return n.Run(ctx, "bash "+ShellQuote(path)+" </dev/null", nil, stdout, stderr)
}

// writeFailedCode and writeFailedLine are what the one command says when
// the script could not be written: both, so a script of its own that
// exits 97 is not taken for a failed write.
const (
	writeFailedCode = 97
	writeFailedLine = "bootlab: could not write the script"
)

// RunScript is RunScript in one command: the script is the command's
// stdin, which cat writes to the file before bash runs it.
func (s shellFiles) RunScript(ctx context.Context, path string, script []byte, stdout, stderr io.Writer) (int, error) {
	if stderr == nil {
		stderr = io.Discard
	}
	cmd := fmt.Sprintf("%s || { echo '%s' >&2; exit %d; }\nexec bash %s </dev/null",
		sshc.WriteFileCommand(path, 0o700), writeFailedLine, writeFailedCode, ShellQuote(path))
	head := &headBuffer{max: 4096}
	code, err := s.run(ctx, cmd, bytes.NewReader(script), stdout, io.MultiWriter(stderr, head))
	if err == nil && code == writeFailedCode && strings.Contains(head.String(), writeFailedLine) {
		msg := strings.TrimSpace(strings.ReplaceAll(head.String(), writeFailedLine, ""))
		return -1, &fs.PathError{Op: "write", Path: path, Err: errors.New(msg)}
	}
	return code, err
}

// headBuffer keeps the first max bytes written to it (the write's errors
// come before anything the script prints).
type headBuffer struct {
	bytes.Buffer
	max int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := h.max - h.Len(); room > 0 {
		h.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
