package class

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Result is what happened to one lab of a class operation.
type Result struct {
	Learner string `json:"learner"`
	Lab     string `json:"lab"`
	// Host is the host the lab is placed on ("" for a class without hosts).
	Host    string        `json:"host,omitempty"`
	Err     error         `json:"-"`
	Error   string        `json:"error,omitempty"`
	Elapsed time.Duration `json:"-"`
	Seconds float64       `json:"seconds"`
}

// Each runs f for every lab, at most parallel at a time, in learner order
// as slots free up. A lab's failure does not stop the others; an interrupt
// stops starting new ones (those are reported as not started).
func Each(ctx context.Context, labs []Lab, parallel int, f func(context.Context, Lab) error) []Result {
	if parallel < 1 {
		parallel = 1
	}
	out := make([]Result, len(labs))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, l := range labs {
		out[i] = Result{Learner: l.Learner, Lab: l.Spec.Name, Host: l.Host}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			out[i].Err = fmt.Errorf("not started: %w", ctx.Err())
			continue
		}
		wg.Add(1)
		go func(i int, l Lab) {
			defer wg.Done()
			defer func() { <-sem }()
			start := time.Now()
			if err := ctx.Err(); err != nil {
				out[i].Err = fmt.Errorf("not started: %w", err)
				return
			}
			out[i].Err = f(ctx, l)
			out[i].Elapsed = time.Since(start)
		}(i, l)
	}
	wg.Wait()
	for i := range out {
		out[i].Seconds = out[i].Elapsed.Round(100 * time.Millisecond).Seconds()
		if out[i].Err != nil {
			out[i].Error = oneLine(out[i].Err.Error())
		}
	}
	return out
}

// EachOnHosts runs f for every lab as Each does, the hosts side by side
// and the labs of each host at most perHost at a time: a host's labs
// compete for its CPUs and disk, not another's. Results are in labs'
// order.
func EachOnHosts(ctx context.Context, labs []Lab, perHost int, f func(context.Context, Lab) error) []Result {
	var order []string
	byHost := map[string][]int{}
	for i, l := range labs {
		if _, ok := byHost[l.Host]; !ok {
			order = append(order, l.Host)
		}
		byHost[l.Host] = append(byHost[l.Host], i)
	}
	out := make([]Result, len(labs))
	var wg sync.WaitGroup
	for _, h := range order {
		idx := byHost[h]
		sub := make([]Lab, len(idx))
		for j, i := range idx {
			sub[j] = labs[i]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j, r := range Each(ctx, sub, perHost, f) {
				out[idx[j]] = r
			}
		}()
	}
	wg.Wait()
	return out
}

// Failed returns the results that failed.
func Failed(rs []Result) []Result {
	var out []Result
	for _, r := range rs {
		if r.Err != nil {
			out = append(out, r)
		}
	}
	return out
}

// Summary is the one error of a class operation in which some labs failed,
// naming each and why; nil when none did.
func Summary(verb string, rs []Result) error {
	failed := Failed(rs)
	if len(failed) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s failed for %d of %d labs:", verb, len(failed), len(rs))
	for _, r := range failed {
		on := ""
		if r.Host != "" {
			on = ", host " + r.Host
		}
		fmt.Fprintf(&b, "\n  %s (learner %s%s): %s", r.Lab, r.Learner, on, oneLine(r.Err.Error()))
	}
	return fmt.Errorf("%s", b.String())
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
