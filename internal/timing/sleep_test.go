package timing

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSleepWaitsTheWholeDuration(t *testing.T) {
	t.Parallel()
	start := time.Now()
	assert.True(t, Sleep(context.Background(), 30*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond, "it returned before d passed")
}

func TestSleepEndsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- Sleep(ctx, time.Hour) }()
	cancel()
	select {
	case ok := <-done:
		assert.False(t, ok, "a cancelled sleep says so")
	case <-time.After(10 * time.Second):
		t.Fatal("Sleep did not return when its context was cancelled")
	}
}

func TestSleepOfNothing(t *testing.T) {
	t.Parallel()
	assert.True(t, Sleep(context.Background(), 0))
	assert.True(t, Sleep(context.Background(), -time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.False(t, Sleep(ctx, 0), "an ended context ends even a zero wait")
	assert.False(t, Sleep(ctx, time.Hour))
}
