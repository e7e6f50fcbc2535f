package dashcmd

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/testutil"
)

func TestDashboardFlags(t *testing.T) {
	var got *Options
	cmd := NewCmdDashboard(&cmdutil.Factory{}, func(o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--listen", "127.0.0.1:9999", "--home", "/h", "--interval", "2s"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "127.0.0.1:9999", got.Listen)
	assert.Equal(t, "/h", got.Home)
	assert.Equal(t, 2*time.Second, got.Interval)

	cmd = NewCmdDashboard(&cmdutil.Factory{}, func(o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "127.0.0.1:8686", got.Listen)

	for _, args := range [][]string{{"--listen", "8686"}, {"--interval", "1ms"}} {
		cmd = NewCmdDashboard(&cmdutil.Factory{}, func(o *Options) error { t.Fatal("must not run"); return nil })
		cmd.SetArgs(args)
		err := cmd.Execute()
		require.Error(t, err, args)
		var ce cmdutil.ExitCoder
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, cmdutil.ExitUsage, ce.ExitCode())
	}
}

// serve runs the dashboard on listen until the test ends and returns its
// base URL and stderr.
func serve(t *testing.T, listen string) (string, *testutil.SyncBuffer) {
	t.Helper()
	errOut := &testutil.SyncBuffer{}
	f := &cmdutil.Factory{Streams: cmdutil.Streams{Out: io.Discard, ErrOut: errOut}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, f, &Options{Listen: listen, Home: t.TempDir(), Interval: 100 * time.Millisecond})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("dashboard did not stop after its context ended")
		}
	})
	re := regexp.MustCompile(`open (http://[^ ?]+/)`)
	for i := 0; i < 100; i++ {
		if m := re.FindStringSubmatch(errOut.String()); m != nil {
			return m[1], errOut
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("dashboard printed no URL: %q", errOut.String())
	return "", nil
}

func getCode(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestDashboardServesLoopbackWithoutToken(t *testing.T) {
	base, errOut := serve(t, "127.0.0.1:0")
	assert.NotContains(t, errOut.String(), "token")
	code, body := getCode(t, base+"api/labs")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"labs":[]}`, body)
	code, body = getCode(t, base)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "bootlab dashboard")
}

// Beyond loopback a token is generated, printed once and required.
func TestDashboardBeyondLoopbackRequiresToken(t *testing.T) {
	_, errOut := serve(t, "0.0.0.0:0")
	m := regexp.MustCompile(`open http://[^/]+:(\d+)/\?token=([0-9a-f]{64}) `).FindStringSubmatch(errOut.String())
	require.NotNil(t, m, errOut.String())
	assert.Equal(t, 2, strings.Count(errOut.String(), m[2]), "the token is printed once, and in the trainer's URL")
	tm := regexp.MustCompile(`trainer's view.*: http://[^ ]+\?token=([0-9a-f]{64})&trainer=([0-9a-f]{64})\n`).FindStringSubmatch(errOut.String())
	require.NotNil(t, tm, errOut.String())
	assert.Equal(t, m[2], tm[1])
	assert.NotEqual(t, m[2], tm[2], "the trainer's token is another")
	base := "http://127.0.0.1:" + m[1] + "/"
	code, _ := getCode(t, base+"api/labs")
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = getCode(t, base+"api/labs?token="+m[2])
	assert.Equal(t, http.StatusOK, code)
	code, _ = getCode(t, base+"api/trainer/faults?token="+m[2])
	assert.Equal(t, http.StatusForbidden, code, "the learners' token does not open the trainer's view")
	code, _ = getCode(t, base+"api/trainer/faults?trainer="+tm[2])
	assert.Equal(t, http.StatusUnauthorized, code, "the trainer's view is behind the dashboard's token too")
	code, body := getCode(t, base+"api/trainer/faults?token="+m[2]+"&trainer="+tm[2])
	assert.Equal(t, http.StatusOK, code, body)
	assert.JSONEq(t, `{"faults":[]}`, body)
}

// On loopback too the trainer's view takes its own token, printed once:
// the page a projector shows is the learners'.
func TestDashboardTrainerViewNeedsItsToken(t *testing.T) {
	base, errOut := serve(t, "127.0.0.1:0")
	m := regexp.MustCompile(`trainer's view.*: http://[^ ]+/\?trainer=([0-9a-f]{64})\n`).FindStringSubmatch(errOut.String())
	require.NotNil(t, m, errOut.String())
	assert.Equal(t, 1, strings.Count(errOut.String(), m[1]), "printed once")
	code, body := getCode(t, base+"api/trainer/faults")
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, "needs the trainer's token")
	code, _ = getCode(t, base+"api/trainer/faults?trainer="+strings.Repeat("0", 64))
	assert.Equal(t, http.StatusForbidden, code)
	code, body = getCode(t, base+"api/trainer/faults?trainer="+m[1])
	assert.Equal(t, http.StatusOK, code, body)
	assert.JSONEq(t, `{"faults":[]}`, body)
}
