package agent

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/ignition/v2/config/v3_2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/agent/endpoints"
	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/lab/probe"
)

// notYet answers 503 to every request, counting them.
func notYet(n *atomic.Int32) func(http.Handler) http.Handler {
	return func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			n.Add(1)
			http.Error(w, "not yet", http.StatusServiceUnavailable)
		})
	}
}

func intp(v int) *int { return &v }

// A pointer config without ignition.timeouts (the installer's) is retried
// for as long as the caller lets it, as Ignition retries forever: no limit
// of the fetcher's own ends it, and the error says only what last failed.
func TestFetchRetriesForAsLongAsTheCallerWaits(t *testing.T) {
	t.Parallel()
	in := testInput(t)
	var n atomic.Int32
	dial := mcsServer(t, in, endpoints.MCSBootstrap, nil, notYet(&n))
	pointer := ignition.Pointer(ignition.MCSURL(domain, "master"), in.PKI.CA.CertPEM)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &Fetcher{DialContext: dial, Retry: time.Millisecond,
		OnAttempt: func(_ string, attempt int, _ error) {
			if attempt == 30 {
				cancel()
			}
		}}
	_, _, err := f.Resolve(ctx, pointer)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gave up after 30 attempts: HTTP 503: not yet", "the caller's end, no limit named")
	assert.NotContains(t, err.Error(), "httpTotal")
	assert.EqualValues(t, 30, n.Load())
}

// ignition.timeouts.httpTotal bounds a source's attempts together, and the
// error names it; Deadline, when shorter, wins.
func TestFetchHonoursHTTPTotal(t *testing.T) {
	t.Parallel()
	in := testInput(t)
	var n atomic.Int32
	dial := mcsServer(t, in, endpoints.MCSBootstrap, nil, notYet(&n))
	pointer := ignition.Pointer(ignition.MCSURL(domain, "master"), in.PKI.CA.CertPEM)
	pointer.Ignition.Timeouts.HTTPTotal = intp(1)

	began := time.Now()
	_, fetched, err := (&Fetcher{DialContext: dial, Retry: 20 * time.Millisecond}).Resolve(context.Background(), pointer)
	require.Error(t, err)
	assert.Empty(t, fetched)
	assert.Contains(t, err.Error(), "(ignition.timeouts.httpTotal: 1s): HTTP 503: not yet")
	assert.GreaterOrEqual(t, time.Since(began), time.Second, "it kept trying for the whole second")
	assert.Greater(t, n.Load(), int32(2), "retried within it")

	_, _, err = (&Fetcher{DialContext: dial, Retry: 20 * time.Millisecond, Deadline: 100 * time.Millisecond}).Resolve(context.Background(), pointer)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "(in 100ms): HTTP 503", "the fetcher's shorter deadline")
}

// ignition.timeouts.httpResponseHeaders bounds the wait for an answer's
// headers (Ignition's default is 10 s): a server slower than that fails
// the attempt, and the fetch goes on trying.
func TestFetchHonoursHTTPResponseHeaders(t *testing.T) {
	t.Parallel()
	in := testInput(t)
	cfgs, err := probe.Generate(in)
	require.NoError(t, err)
	var n atomic.Int32
	dial := mcsServer(t, in, endpoints.MCSBootstrap, map[string][]byte{"master": cfgs.MasterServed}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				select { // the first answer comes late
				case <-time.After(3 * time.Second):
				case <-r.Context().Done():
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	pointer, err := ignition.Parse(cfgs.Master)
	require.NoError(t, err)
	pointer.Ignition.Timeouts.HTTPResponseHeaders = intp(1)
	var errs []string
	f := &Fetcher{DialContext: dial, Retry: time.Millisecond,
		OnAttempt: func(_ string, _ int, err error) { errs = append(errs, err.Error()) }}
	_, fetched, err := f.Resolve(context.Background(), pointer)
	require.NoError(t, err)
	assert.Equal(t, 2, fetched[0].Attempts)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0], "timeout awaiting response headers")
}

func TestTimeoutsOf(t *testing.T) {
	t.Parallel()
	tm, err := timeoutsOf(types.Timeouts{})
	require.NoError(t, err)
	assert.Equal(t, timeouts{total: 0, headers: 10 * time.Second}, tm, "Ignition's defaults")
	tm, err = timeoutsOf(types.Timeouts{HTTPTotal: intp(600), HTTPResponseHeaders: intp(0)})
	require.NoError(t, err)
	assert.Equal(t, timeouts{total: 10 * time.Minute, headers: 0}, tm)
	_, err = timeoutsOf(types.Timeouts{HTTPTotal: intp(-1)})
	assert.EqualError(t, err, "ignition.timeouts.httpTotal is -1: seconds, 0 or more (0: no limit)")
	_, err = timeoutsOf(types.Timeouts{HTTPResponseHeaders: intp(-5)})
	assert.EqualError(t, err, "ignition.timeouts.httpResponseHeaders is -5: seconds, 0 or more (0: no limit)")
}

// An attempt's own bound never cuts the config's header wait short.
func TestAttemptTimeout(t *testing.T) {
	t.Parallel()
	assert.Equal(t, 30*time.Second, attemptTimeout(defaultHeaderTimeout), "Ignition's default headers wait")
	assert.Equal(t, 80*time.Second, attemptTimeout(time.Minute), "past a longer headers wait")
	assert.Equal(t, time.Duration(0), attemptTimeout(0), "no header limit: no attempt limit")
	f := &Fetcher{}
	assert.Equal(t, 80*time.Second, f.client(nil, time.Minute).Timeout)
}
