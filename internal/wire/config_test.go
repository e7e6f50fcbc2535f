package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A node finds itself by its NIC's MAC whatever its case; the nodes of a
// config come out sorted by name.
func TestConfigSelfAndSortedNodes(t *testing.T) {
	t.Parallel()
	c := Config{Nodes: map[string]NodeExpect{
		"52:54:00:00:00:0b": {Name: "master-1"},
		"52:54:00:00:00:0a": {Name: "master-0"},
	}}
	self, ok := c.Self("52:54:00:00:00:0B")
	assert.True(t, ok)
	assert.Equal(t, "master-1", self.Name)
	_, ok = c.Self("52:54:00:00:00:0c")
	assert.False(t, ok)
	assert.Equal(t, []NodeExpect{{Name: "master-0"}, {Name: "master-1"}}, c.SortedNodes())
}
