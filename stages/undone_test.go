package stages

import (
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bootlab/bootlab/internal/node"
)

// statNode knows only which files exist.
type statNode struct {
	node.Node
	files map[string]bool
}

func (n statNode) Stat(_ context.Context, p string) (node.FileInfo, error) {
	if n.files[p] {
		return node.FileInfo{}, nil
	}
	return node.FileInfo{}, fs.ErrNotExist
}

// A check a later stage undoes (the bootstrap MCS, the bootstrap etcd
// member) fails until that stage's marker exists, and says so in its name.
func TestUndoneBy(t *testing.T) {
	t.Parallel()
	failing := Check{Name: "the MCS answers", Run: func(context.Context, *CheckEnv) error { return errors.New("connection refused") }}
	c := undoneBy("cvo-overrides.done", "stage 14 stops the bootstrap MCS", failing)
	assert.Equal(t, "the MCS answers (until cvo-overrides.done: stage 14 stops the bootstrap MCS)", c.Name)
	before := &CheckEnv{Node: statNode{files: map[string]bool{}}}
	assert.EqualError(t, c.Run(context.Background(), before), "connection refused")
	after := &CheckEnv{Node: statNode{files: map[string]bool{"/opt/openshift/cvo-overrides.done": true}}}
	assert.NoError(t, c.Run(context.Background(), after))
	passing := undoneBy("cvo-overrides.done", "x", Check{Run: func(context.Context, *CheckEnv) error { return nil }})
	assert.NoError(t, passing.Run(context.Background(), before))
}
