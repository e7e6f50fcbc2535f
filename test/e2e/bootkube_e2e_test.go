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
	// Not parallel: seconds, no VM; its spec's lab name (stage-e2e) is the other stage tests' too.
	spec, _ := stageSpec(t)
	script := filepath.Join("..", "..", "testdata", "bootkube", "4.22", "usr", "local", "bin", "bootkube.sh")

	r := mustRun(t, "stage", "list", "--bootkube", script, "-o", "json")
	var doc struct {
		Kind   string `json:"kind"`
		Stages []struct {
			Number int    `json:"number"`
			Slug   string `json:"slug"`
			Steps  []struct {
				Name string `json:"name"`
				New  bool   `json:"new"`
			} `json:"steps"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || len(doc.Stages) != 15 || doc.Kind != "StageList" {
		t.Fatalf("stage list --bootkube -o json: %v\n%s", err, r)
	}
	list := doc.Stages
	if got := list[7]; got.Slug != "kube-apiserver-bootstrap" || len(got.Steps) != 4 || got.Steps[0].Name != "konnectivity-certs" || got.Steps[0].New {
		t.Errorf("want stage 08 to open with the konnectivity steps the catalog knows (kube-apiserver-bootstrap, 4 steps, konnectivity-certs known); got %+v", got)
	}

	r = mustRun(t, "stage", "diff", "08", "--bootkube", script)
	if !strings.Contains(r.Stdout, "+++ scripts/08-kube-apiserver-bootstrap.sh (bootlab's annotated script)") || !strings.Contains(r.Stdout, "-konnectivity_setup") {
		t.Errorf("want stage diff 08 to show bootlab's annotated script against bootkube's konnectivity_setup; got:\n%s", r)
	}

	r = mustRun(t, "stage", "run", "07", "--dry-run", "--bootkube", script, "-f", spec)
	if !strings.Contains(r.Stdout, "BOOTLAB_STOP_BEFORE=' konnectivity-certs ") || !strings.Contains(r.Stdout, ". /usr/local/bin/bootstrap-service-record.sh; bootlab_stop_hook") {
		t.Errorf("want stage run --dry-run --bootkube to stop before konnectivity-certs through the service record hook; got:\n%s", r)
	}
	if r := run(t, "stage", "run", "07", "--bootkube", script, "-f", spec); r.Code != 2 {
		t.Errorf("want --bootkube without --dry-run refused as a usage error (exit 2); got:\n%s", r)
	}
}
