package classcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/stages"
)

// class status shows the stage a learner's lab reached from that lab's own
// records only: an earlier lab of the same name (another UUID) reached
// nothing for this one, nor did records that name no lab.
func TestStageReachedOfTheLabOnly(t *testing.T) {
	s := &spec.Spec{Name: "c1-ann", LabDir: t.TempDir()}
	require.NoError(t, os.MkdirAll(labdir.Stages(s), 0o700))
	lines := []string{
		`{"phase":"stage end","number":15,"result":"success"}`,
		`{"phase":"stage end","number":14,"result":"success","labUUID":"earlier"}`,
		`{"phase":"stage end","number":1,"result":"success","labUUID":"current"}`,
		`{"phase":"stage end","number":2,"result":"failure","labUUID":"current"}`,
	}
	require.NoError(t, os.WriteFile(filepath.Join(labdir.Stages(s), stages.RecordsFile), []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	tests := []struct {
		labUUID, want string
	}{
		{"current", "01 openshift-manifests"},
		{"earlier", "14 cvo-overrides"},
		{"rebuilt", ""},
		{"", "15 check-api-url"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, stageReached(labdir.Stages(s), tt.labUUID), "lab %q", tt.labUUID)
	}
	assert.Empty(t, stageReached(labdir.Stages(&spec.Spec{Name: "c1-ben", LabDir: t.TempDir()}), "current"), "no stage log")
}
