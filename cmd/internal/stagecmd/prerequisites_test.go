package stagecmd

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/stages"
	"github.com/bootlab/bootlab/stages/stagestest"
)

// On a rehearsal lab `stage run 07` runs what 07 needs first and says so;
// what it returns then passes the order check a real node is held to.
func TestWithPrerequisitesRunsWhatTheStageNeedsFirst(t *testing.T) {
	e := newEnv(t)
	var say bytes.Buffer
	e.f.Status = status.New(&say, false)
	node := stagestest.New(t.TempDir())
	require.NoError(t, node.FinishBefore(stages.Default(), 4))
	vars := stages.Vars{Version: stages.MustVersion("4.19")}
	runner := &stages.Runner{Catalog: stages.Default(), Node: node, Vars: vars}
	sel, err := runner.Catalog.Select(stages.Selection{Only: []string{"07"}})
	require.NoError(t, err)

	got, err := withPrerequisites(context.Background(), e.f, runner, sel)
	require.NoError(t, err)
	var ids []string
	for _, s := range got {
		ids = append(ids, s.ID())
	}
	assert.Equal(t, []string{"04", "05", "06", "07"}, ids)
	assert.Contains(t, say.String(), "stage 07 needs 04, 05, 06 first")
	assert.NoError(t, runner.Preflight(context.Background(), got, stages.Options{}))
	// Alone, 07 is refused: that is what a real node gets.
	assert.Error(t, runner.Preflight(context.Background(), sel, stages.Options{}))
}
