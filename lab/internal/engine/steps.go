package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/bootlab/bootlab/internal/status"
)

// StepResult is the outcome of one step of Up or Down.
type StepResult struct {
	Name    string
	Changed bool
	// Detail says what changed ("defined", "started", "3 created"...).
	Detail string
}

// step is one idempotent unit of Up or Down: run reports what it changed.
type step struct {
	name string
	run  func(ctx context.Context) (detail string, err error)
}

func runSteps(ctx context.Context, st *status.Status, log *slog.Logger, steps []step) ([]StepResult, error) {
	var out []StepResult
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		st.Start("%s", s.name)
		detail, err := s.run(ctx)
		if err != nil {
			st.End(false)
			// Ctrl-C kills what the step ran (haproxy's starter, say): say
			// it was interrupted, so the caller offers to resume.
			if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
				err = fmt.Errorf("%s interrupted (%v): %w", s.name, err, cerr)
			}
			return out, err
		}
		st.EndDetail(true, detail)
		if detail != "" {
			log.Debug(s.name, "changed", detail)
		} else {
			log.Debug(s.name, "changed", "nothing")
		}
		out = append(out, StepResult{Name: s.name, Changed: detail != "", Detail: detail})
	}
	// An interrupt during the last step is not swallowed: the step may have
	// stopped short of some of its objects.
	return out, ctx.Err()
}

// parallel runs f for each item, at most limit at a time, and returns the
// first error (every started item still runs to completion or failure; once
// ctx is done no more are started).
func parallel[T any](ctx context.Context, items []T, limit int, f func(context.Context, T) (bool, error)) (int, error) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   error
		changed int
		sem     = make(chan struct{}, limit)
	)
	for _, it := range items {
		sem <- struct{}{}
		if err := ctx.Err(); err != nil {
			// Interrupted: start nothing more; what runs finishes.
			<-sem
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
			break
		}
		wg.Add(1)
		go func(it T) {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := f(ctx, it)
			mu.Lock()
			defer mu.Unlock()
			if c {
				changed++
			}
			if err != nil && first == nil {
				first = err
			}
		}(it)
	}
	wg.Wait()
	return changed, first
}

const parallelism = 8
