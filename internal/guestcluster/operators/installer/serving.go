package installer

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// procDir is where the node's processes are listed (a test's own).
var procDir = "/proc"

// servingRevision says whether the node's kube-apiserver processes all run
// with the revision's --etcd-servers (servers, joined as the pod writes
// them), and at least one does: after a new revision lands, the old
// process still answers /readyz on :6443 until the kubelet stand-in stops
// it, and that answer is not the new revision's.
func servingRevision(servers []string) bool {
	want := []byte("--etcd-servers=" + strings.Join(servers, ","))
	ents, err := os.ReadDir(procDir)
	if err != nil {
		return false
	}
	found := false
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join(procDir, e.Name(), "cmdline"))
		if err != nil || len(cmd) == 0 {
			continue
		}
		args := bytes.Split(bytes.TrimRight(cmd, "\x00"), []byte{0})
		switch {
		case filepath.Base(string(args[0])) == "kube-apiserver":
		case len(args) > 1 && string(args[1]) == "kube-apiserver": // hyperkube kube-apiserver
		default:
			continue
		}
		mine := false
		for _, a := range args[1:] {
			if bytes.HasPrefix(a, []byte("--etcd-servers=")) {
				mine = bytes.Equal(a, want)
			}
		}
		if !mine {
			return false // the previous revision's process is still there
		}
		found = true
	}
	return found
}
