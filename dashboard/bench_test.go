package dashboard

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkDashboardUpdate10Labs is the server time of one update with 10
// labs (6 nodes each, stage records, verify results): read every lab
// through lab.List and lab.Inspect (libvirt in memory), encode, compare and
// push the changed lab to a connected page. It also reports the first-load
// size: page, script, style, icon and the first snapshot of the 10 labs.
func BenchmarkDashboardUpdate10Labs(b *testing.B) { benchmarkUpdate(b, 10) }

// BenchmarkDashboardUpdate100Labs is the same with 100 labs: a class of
// 100 learners on one trainer's page (docs/class.md).
func BenchmarkDashboardUpdate100Labs(b *testing.B) { benchmarkUpdate(b, 100) }

func benchmarkUpdate(b *testing.B, labs int) {
	home, hv := fixtureHome(b, labs)
	c := &Collector{Home: home, Connect: connector(hv)}
	srv := New(Options{Source: c})
	ctx := context.Background()
	if _, err := srv.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	sub := &subscriber{ch: make(chan []byte, 1024)}
	srv.mu.Lock()
	srv.subs[sub] = struct{}{}
	srv.mu.Unlock()
	go func() {
		for range sub.ch {
		}
	}()
	b.Cleanup(func() {
		srv.mu.Lock()
		delete(srv.subs, sub)
		close(sub.ch)
		srv.mu.Unlock()
	})

	b.ResetTimer()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		// One node changes state each update, as a learner's lab would.
		setActive(hv, fmt.Sprintf("bootlab-ux%d-worker-1", i%labs+1), i%(2*labs) >= labs)
		n, err := srv.Refresh(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if n != 1 {
			b.Fatalf("update %d pushed %d labs, want 1", i, n)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/update")
	b.StopTimer()
	b.ReportMetric(float64(firstLoadBytes(b, srv)), "first-load-bytes")
}

// firstLoadBytes is what a browser fetches on first load: the embedded
// assets and the first snapshot event.
func firstLoadBytes(b *testing.B, srv *Server) int {
	total := 0
	for _, name := range []string{"index.html", "app.js", "app.css", "favicon.svg"} {
		data, err := assets.ReadFile("assets/" + name)
		if err != nil {
			b.Fatal(err)
		}
		total += len(data)
	}
	srv.mu.RLock()
	total += len(event("snapshot", srv.labsJSON("")))
	srv.mu.RUnlock()
	return total
}
