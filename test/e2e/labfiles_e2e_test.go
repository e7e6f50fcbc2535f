//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/stages"
)

// TestNextLabOfTheNameStartsClean is issue 27: a learner's rehearsal lab
// (a class of one, so `class status` can be asked) runs stage 01 and is
// verified; `lab down` removes its lab directory, stage logs included.
// Then a probe lab of the same name is built: the dashboard's
// /api/labs/NAME and `class status` show no stage reached and no verify
// result, even with the earlier lab's records.jsonl and verify.json put
// back into the new lab's directory (as an older bootlab's down left them).
func TestNextLabOfTheNameStartsClean(t *testing.T) {
	parallel(t) // its own home and pool: setRunEnv, not t.Setenv
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	class := "n" + hex.EncodeToString(b)
	home := filepath.Join(e2eRoot, class+"-home")
	require.NoError(t, os.MkdirAll(home, 0o755))
	require.NoError(t, os.Chmod(e2eRoot, 0o755))
	setRunEnv(t, "BOOTLAB_HOME", home)
	file := filepath.Join(home, "class.yaml")
	pool := freeCIDR(t).String()
	writeClass := func(rehearsal bool) {
		override := ""
		if rehearsal {
			override = "overrides:\n  ann:\n    openshift: {manualBootstrap: true}\n"
		}
		require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(`name: %s
template:
  profile: probe
  accelerator: tcg
  topology: {masters: 1, workers: 0}
learners: [ann]
addressPool: %s
%s`, class, pool, override)), 0o644))
	}
	labName := class + "-ann"
	labDir := filepath.Join(home, "labs", labName)
	t.Cleanup(func() {
		if r := run(t, "class", "down", "--name", class, "--yes"); r.Code != 0 {
			t.Errorf("cleanup: class down failed:\n%s", r)
		}
		if left := labDirLeft(t, labDir); len(left) > 0 {
			t.Errorf("cleanup: class down left the lab directory %s with %v", labDir, left)
		}
		if !t.Failed() {
			os.RemoveAll(home)
		}
	})

	writeClass(true)
	mustRun(t, "class", "up", "-f", file)
	first, err := labdir.LoadState(labDir)
	require.NoError(t, err)
	require.True(t, first.Spec.Rehearsal())
	waitSSH(t, labName)
	mustRun(t, "stage", "run", "01", "--name", labName)
	// A rehearsal lab whose stages have not reached 12 verifies with its
	// stage-gated checks pending; the result is kept as any other.
	r := mustRun(t, "lab", "verify", "--name", labName, "--timeout", "0")
	require.Contains(t, r.Stderr, "pending", r.String())

	base, _ := startDashboard(t, home, "127.0.0.1:0")
	view := waitLabView(t, base, labName, func(v labView) bool { return v.StageReached == 1 && v.Verify != nil })
	assert.Equal(t, "done", view.Stages[0].State, "the dashboard follows the lab's own stage")
	st := learnerStatus(t, class, "ann")
	assert.Equal(t, "01 openshift-manifests", st.Stage, "class status shows the lab's own stage")
	require.NotNil(t, st.Verify)
	oldRecords, err := os.ReadFile(filepath.Join(labdir.Stages(first.Spec), stages.RecordsFile))
	require.NoError(t, err)
	oldVerify, err := os.ReadFile(labdir.VerifyRecordPath(labDir))
	require.NoError(t, err)

	labDown(t, labDir, "--name", labName)
	assert.Empty(t, leftovers(t, labEnv{Name: labName}))

	// The same learner, the same lab name: a probe lab this time.
	writeClass(false)
	mustRun(t, "class", "up", "-f", file)
	again, err := labdir.LoadState(labDir)
	require.NoError(t, err)
	require.False(t, again.Spec.Rehearsal())
	assert.NotEqual(t, first.UUID, again.UUID, "a new lab, a new identity")
	assert.NoDirExists(t, labdir.Stages(again.Spec), "no stage ever ran on the new lab")
	assert.NoFileExists(t, labdir.VerifyRecordPath(labDir), "nor a verify")
	assertNothingReached(t, base, class, labName)

	// The earlier lab's files put back: still not this lab's.
	require.NoError(t, os.MkdirAll(labdir.Stages(again.Spec), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(labdir.Stages(again.Spec), stages.RecordsFile), oldRecords, 0o600))
	require.NoError(t, os.WriteFile(labdir.VerifyRecordPath(labDir), oldVerify, 0o600))
	// The dashboard reads the labs every 500 ms: give it a few rounds.
	time.Sleep(3 * time.Second)
	assertNothingReached(t, base, class, labName)
}

// labView is what the test reads of the dashboard's /api/labs/NAME.
type labView struct {
	StageReached int `json:"stageReached"`
	NodesTotal   int `json:"nodesTotal"`
	Stages       []struct {
		Number int    `json:"number"`
		State  string `json:"state"`
	} `json:"stages"`
	Verify *struct {
		OK bool `json:"ok"`
	} `json:"verify"`
	Serving struct {
		API []string `json:"api"`
		MCS []string `json:"mcs"`
	} `json:"serving"`
	Etcd *struct {
		From    string `json:"from"`
		Members []struct {
			Name  string `json:"name"`
			Node  string `json:"node"`
			State string `json:"state"`
		} `json:"members"`
	} `json:"etcd"`
}

// errNotOK is getLabView's answer when the dashboard does not answer 200
// (the lab not listed yet).
var errNotOK = errors.New("the dashboard did not answer 200")

// getLabView reads the dashboard's view of lab once, with the body it
// answered.
func getLabView(base, lab string) (labView, string, error) {
	var v labView
	resp, err := http.Get(base + "api/labs/" + lab)
	if err != nil {
		return v, "", err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return v, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return v, string(data), fmt.Errorf("%w: %s", errNotOK, resp.Status)
	}
	return v, string(data), json.Unmarshal(data, &v)
}

// waitLabView polls the dashboard's view of lab until ok holds (1 minute).
func waitLabView(t *testing.T, base, lab string, ok func(labView) bool) labView {
	t.Helper()
	var v labView
	var body string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		var err error
		v, body, err = getLabView(base, lab)
		if errors.Is(err, errNotOK) {
			continue
		}
		require.NoError(t, err, body)
		if ok(v) {
			return v
		}
	}
	t.Fatalf("the dashboard's view of %s never got there:\n%s", lab, body)
	return v
}

// learnerLine is one learner's line of `class status -o json`.
type learnerLine struct {
	Learner string `json:"learner"`
	Stage   string `json:"stage"`
	Verify  *struct {
		OK bool `json:"ok"`
	} `json:"verify"`
}

// learnerStatus is learner's line of `class status -o json`.
func learnerStatus(t *testing.T, class, learner string) learnerLine {
	t.Helper()
	r := mustRun(t, "class", "status", "--name", class, "-o", "json")
	var doc struct {
		Labs []learnerLine `json:"labs"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &doc), r.String())
	for _, l := range doc.Labs {
		if l.Learner == learner {
			return l
		}
	}
	t.Fatalf("class status has no line for %s:\n%s", learner, r)
	return learnerLine{}
}

// assertNothingReached: the dashboard and class status show the lab with
// no stage reached, every stage pending, and no verify result.
func assertNothingReached(t *testing.T, base, class, lab string) {
	t.Helper()
	v := waitLabView(t, base, lab, func(v labView) bool { return v.NodesTotal > 0 && len(v.Stages) == 15 })
	assert.Equal(t, 0, v.StageReached, "the dashboard shows no stage reached")
	for _, s := range v.Stages {
		assert.Equal(t, "pending", s.State, "stage %02d", s.Number)
	}
	assert.Nil(t, v.Verify, "the dashboard shows no verify result")
	st := learnerStatus(t, class, "ann")
	assert.Empty(t, st.Stage, "class status shows no stage reached")
	assert.Nil(t, st.Verify, "class status shows no verify result")
}
