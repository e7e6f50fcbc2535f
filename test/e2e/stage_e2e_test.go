//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/internal/sshc/sshctest"
)

// stageSpec writes a lab spec whose lab directory is private to the test.
func stageSpec(t *testing.T) (spec, labDir string) {
	t.Helper()
	dir := t.TempDir()
	labDir = filepath.Join(dir, "lab")
	spec = filepath.Join(dir, "lab.yaml")
	if err := os.WriteFile(spec, []byte(fmt.Sprintf("name: stage-e2e\nlabDir: %s\nopenshift:\n  version: 4.19.10\n", labDir)), 0o600); err != nil {
		t.Fatal(err)
	}
	return spec, labDir
}

func TestStageListExplainDryRun(t *testing.T) {
	// Not parallel: seconds, no VM; its spec's lab name (stage-e2e) is the other stage tests' too.
	spec, _ := stageSpec(t)

	var doc struct {
		Stages []struct {
			Number int    `json:"number"`
			Slug   string `json:"slug"`
			Script string `json:"script"`
		} `json:"stages"`
	}
	r := mustRun(t, "stage", "list", "-f", spec, "-o", "json")
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || len(doc.Stages) != 15 {
		t.Fatalf("stage list -o json: %v, %d stages\n%s", err, len(doc.Stages), r)
	}
	list := doc.Stages
	if list[6].Slug != "etcd-bootstrap" || list[6].Script != "render-etcd" {
		t.Errorf("stage 07 is %+v", list[6])
	}

	r = mustRun(t, "stage", "explain", "render-etcd")
	if !strings.HasPrefix(r.Stdout, "# Stage 07: etcd-bootstrap") || strings.Contains(r.Stdout, "\x1b[") {
		t.Errorf("explain piped must be plain markdown:\n%s", r.Stdout)
	}

	r = mustRun(t, "stage", "run", "--all", "--dry-run", "-f", spec)
	if n := strings.Count(r.Stdout, "#!/usr/bin/env bash\n"); n != 15 {
		t.Errorf("dry run printed %d scripts, want 15", n)
	}
	if !strings.Contains(r.Stdout, "\nAPI_INT_URL=api-int.ocp.lab.local\n") {
		t.Errorf("dry run does not resolve the API names")
	}

	if r := run(t, "stage", "run", "-f", spec); r.Code != 2 {
		t.Errorf("stage run without stages must be a usage error (2):\n%s", r)
	}

	// --skip leaves out whole stages: one step of stage 12 is refused, not
	// silently taken with the MCS; the stage's number skips it.
	if r := run(t, "stage", "run", "--all", "--skip", "cco-bootstrap", "--dry-run", "-f", spec); r.Code != 2 || !strings.Contains(r.Stderr, "--skip 12") {
		t.Errorf("--skip cco-bootstrap must be a usage error naming --skip 12:\n%s", r)
	}
	r = mustRun(t, "stage", "run", "--all", "--skip", "12", "--dry-run", "-f", spec)
	if strings.Contains(r.Stdout, "# bootlab stage 12 ") || !strings.Contains(r.Stdout, "# bootlab stage 13 ") {
		t.Errorf("--skip 12 must leave out stage 12 only")
	}
}

// TestStageOverSSH points bootlab at a real sshd on loopback standing in
// for the bootstrap node: status reads markers over SSH, validate reports
// the missing ones with exit 4, and the host key is recorded in the lab.
func TestStageOverSSH(t *testing.T) {
	// Not parallel: seconds, no VM; its spec's lab name (stage-e2e) is the other stage tests' too.
	spec, labDir := stageSpec(t)
	sshd := sshctest.StartOpenSSHD(t)
	port := sshd.Port
	node := []string{"-f", spec, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--user", "root", "--key", sshd.KeyFile}

	r := mustRun(t, append([]string{"stage", "status", "-o", "json"}, node...)...)
	var st struct {
		Next   string `json:"next"`
		Stages []struct {
			State string `json:"state"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, r)
	}
	if st.Next != "01 openshift-manifests" || len(st.Stages) != 15 {
		t.Errorf("a node without markers starts at stage 01: %+v", st)
	}
	kh, err := os.ReadFile(filepath.Join(labDir, "ssh", "known_hosts"))
	if err != nil || !strings.Contains(string(kh), fmt.Sprintf("[127.0.0.1]:%d ssh-ed25519 ", port)) {
		t.Errorf("host key not recorded in the lab: %v %q", err, kh)
	}

	r = run(t, append([]string{"stage", "validate", "07", "--no-live"}, node...)...)
	if r.Code != 4 || !strings.Contains(r.Stdout, "/opt/openshift/etcd-bootstrap.done is missing") {
		t.Errorf("validate on a fresh node must fail its checks with exit 4:\n%s", r)
	}
}
