package sshc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
)

// missingCode is the exit code ReadFile's command uses for "no such file".
const missingCode = 66

// ReadFile reads a file on the host with cat; a missing file is an error
// wrapping fs.ErrNotExist.
func (c *Client) ReadFile(ctx context.Context, path string) ([]byte, error) {
	r, err := c.Run(ctx, fmt.Sprintf("[ -e %[1]s ] || exit %[2]d; cat -- %[1]s", Quote(path), missingCode))
	if err != nil {
		return nil, err
	}
	switch r.ExitCode {
	case 0:
		return r.Stdout, nil
	case missingCode:
		return nil, &fs.PathError{Op: "read", Path: c.String() + ":" + path, Err: fs.ErrNotExist}
	}
	return nil, &fs.PathError{Op: "read", Path: c.String() + ":" + path, Err: errors.New(strings.TrimSpace(string(r.Stderr)))}
}

// WriteFile writes data to path on the host with mode (permission bits),
// as WriteFileCommand says.
func (c *Client) WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	var errb bytes.Buffer
	code, err := c.Stream(ctx, WriteFileCommand(path, mode), bytes.NewReader(data), io.Discard, &errb)
	if err != nil {
		return err
	}
	if code != 0 {
		return &fs.PathError{Op: "write", Path: c.String() + ":" + path, Err: errors.New(strings.TrimSpace(errb.String()))}
	}
	return nil
}

// WriteFileCommand is the shell command that writes its standard input to
// path with mode: into a temporary file first (umask 077, so a secret is
// never readable by others, even briefly), renamed over path, so a reader
// sees the old or the new content, never half; the directory is made
// where it is missing (a test, not mkdir and dirname every time: on an
// emulated node each program started costs 0.04 to 0.1 s).
func WriteFileCommand(p string, mode fs.FileMode) string {
	return fmt.Sprintf("{ [ -d %[3]s ] || mkdir -p -- %[3]s; } && umask 077 && cat > %[1]s.bootlab-tmp && chmod %[2]o %[1]s.bootlab-tmp && mv -f -- %[1]s.bootlab-tmp %[1]s", Quote(p), mode.Perm(), Quote(path.Dir(p)))
}

// Quote quotes s for a POSIX shell.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
