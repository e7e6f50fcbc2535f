package diagnose

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The service records are read as the installer's analysis reads them
// (pkg/gather/service/analyze.go and its test's cases), for every service,
// and what the record says of its end is added.
func TestServiceRecords(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, json string
		// want: failingNow, successful, running, failingStage, starts.
		failing, successful, running bool
		stage                        string
		starts                       int
		err                          string
	}{
		{name: "successful", json: `[{"phase":"service start"},{"phase":"stage start","stage":"pull-release-image"},
			{"phase":"stage end","stage":"pull-release-image","result":"success"},{"phase":"service end","result":"success"}]`,
			successful: true, starts: 1},
		{name: "failed stage, no end yet", json: `[{"phase":"service start"},{"phase":"stage start","stage":"pull-release-image"},
			{"phase":"stage end","stage":"pull-release-image","result":"failure","errorMessage":"Line 1\nLine 2\nLine 3"}]`,
			failing: true, stage: "pull-release-image", starts: 1},
		{name: "retrying the failed stage", json: `[{"phase":"service start"},{"phase":"stage start","stage":"pull-release-image"},
			{"phase":"stage end","stage":"pull-release-image","result":"failure"},{"phase":"stage start","stage":"pull-release-image"}]`,
			failing: true, running: true, stage: "pull-release-image", starts: 1},
		{name: "restarted at the failed stage", json: `[{"phase":"service start"},{"phase":"stage start","stage":"cb-bootstrap"},
			{"phase":"stage end","stage":"cb-bootstrap","result":"failure"},{"phase":"service end","result":"failure"},
			{"phase":"service start"},{"phase":"stage start","stage":"cb-bootstrap"}]`,
			failing: true, running: true, stage: "cb-bootstrap", starts: 2},
		{name: "restarted and past it", json: `[{"phase":"service start"},{"phase":"stage start","stage":"cb-bootstrap"},
			{"phase":"stage end","stage":"cb-bootstrap","result":"failure"},{"phase":"service end","result":"failure"},
			{"phase":"service start"},{"phase":"stage start","stage":"cvo-overrides"}]`,
			running: true, stage: "cb-bootstrap", starts: 2},
		{name: "a stage bootkube carries on after", json: `[{"phase":"service start"},{"phase":"stage start","stage":"resolve-api-int-url"},
			{"phase":"stage end","stage":"resolve-api-int-url","result":"failure"},{"phase":"stage start","stage":"cb-bootstrap"},
			{"phase":"stage end","stage":"cb-bootstrap","result":"success"},{"phase":"service end","result":"success"}]`,
			successful: true, starts: 1},
		{name: "a post-command ends it", json: `[{"phase":"service start"},{"phase":"service end","result":"success"},
			{"phase":"post-command start","postCommand":"x"},{"phase":"post-command end","postCommand":"x","result":"success"}]`,
			successful: true, starts: 1},
		{name: "only a pre-command, which succeeded", json: `[{"phase":"pre-command start","preCommand":"kubelet-pause-image"},
			{"phase":"pre-command end","preCommand":"kubelet-pause-image","result":"success"}]`},
		{name: "a pre-command failed", json: `[{"phase":"pre-command start","preCommand":"kubelet-pause-image"},
			{"phase":"pre-command end","preCommand":"kubelet-pause-image","result":"failure"}]`,
			failing: true, stage: "pre-command kubelet-pause-image"},
		{name: "never started", json: `[]`},
		{name: "empty", json: ``, err: "it is empty or not JSON"},
		{name: "an object", json: `{}`, err: "it is not a JSON array of entries"},
		{name: "a broken entry", json: `[{"phase":"service start"},7]`, err: "entry 2 is not a record entry"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			recs, err := parseRecords([]byte(c.json))
			if c.err != "" {
				assert.EqualError(t, err, c.err)
				return
			}
			require.NoError(t, err)
			s := &service{name: "x", recs: recs}
			s.analyze()
			assert.Equal(t, c.failing, s.failingNow, "failingNow")
			assert.Equal(t, c.successful, s.successful, "successful")
			assert.Equal(t, c.running, s.running, "running")
			assert.Equal(t, c.stage, s.failingStage, "failingStage")
			assert.Equal(t, c.starts, s.starts, "starts")
		})
	}
}

// Each entry's line is the line it starts on, as jq indents the file.
func TestRecordLines(t *testing.T) {
	t.Parallel()
	recs, err := parseRecords(records(start(at(0, 0)), stage(at(0, 1), "a"), stageEnd(at(0, 2), "a", "success")))
	require.NoError(t, err)
	require.Len(t, recs, 3)
	assert.Equal(t, []int{2, 6, 11}, []int{recs[0].line, recs[1].line, recs[2].line})
}

// A failed service is named in the installer's own words.
func TestFailureMessages(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, stage, want string }{
		{"release-image", "pull-release-image", "The bootstrap machine failed to download the release image"},
		{"bootkube", "konnectivity-certs", "The bootstrap machine failed to generate konnectivity certificates"},
		{"bootkube", "cb-bootstrap", `The bootkube service failed at stage "cb-bootstrap"`},
		{"progress", "report-bootstrap-complete", `The progress service failed at stage "report-bootstrap-complete"`},
		{"crio-configure", "", "The crio-configure service failed"},
	} {
		s := &service{name: c.name, failingStage: c.stage}
		assert.Equal(t, c.want, s.failureMessage())
	}
}
