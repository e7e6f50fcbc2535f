//go:build e2e

package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestStageNodeScriptFromFile maps, diffs and dry-runs a copy of a node's
// bootkube.sh with the built binary: no node needed.
func TestStageNodeScriptFromFile(t *testing.T) {
	spec, _ := stageSpec(t)
	script := filepath.Join("..", "..", "testdata", "bootkube", "4.22", "usr", "local", "bin", "bootkube.sh")

	r := mustRun(t, "stage", "list", "--bootkube", script, "-o", "json")
	var list []struct {
		Number int    `json:"number"`
		Slug   string `json:"slug"`
		Steps  []struct {
			Name string `json:"name"`
			New  bool   `json:"new"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil || len(list) != 15 {
		t.Fatalf("stage list --bootkube -o json: %v\n%s", err, r)
	}
	if got := list[6]; got.Slug != "etcd-bootstrap" || len(got.Steps) != 4 || got.Steps[1].Name != "konnectivity-certs" || !got.Steps[1].New {
		t.Errorf("stage 07 holds etcd-bootstrap and the new konnectivity steps: %+v", got)
	}

	r = mustRun(t, "stage", "diff", "07", "--bootkube", script)
	if !strings.Contains(r.Stdout, "+++ scripts/07-etcd-bootstrap.sh (bootlab's annotated script)") || !strings.Contains(r.Stdout, "-konnectivity_setup") {
		t.Errorf("stage diff 07:\n%s", r)
	}

	r = mustRun(t, "stage", "run", "07", "--dry-run", "--bootkube", script, "-f", spec)
	if !strings.Contains(r.Stdout, "BOOTLAB_STOP_BEFORE=' kube-apiserver-bootstrap ") || !strings.Contains(r.Stdout, ". /usr/local/bin/bootstrap-service-record.sh; bootlab_stop_hook") {
		t.Errorf("stage run --dry-run --bootkube:\n%s", r)
	}
	if r := run(t, "stage", "run", "07", "--bootkube", script, "-f", spec); r.Code != 2 {
		t.Errorf("--bootkube without --dry-run is a usage error:\n%s", r)
	}
}
