package timing

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPhasesLogEachPhaseFromTheEndOfThePrevious(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := []time.Time{t0, t0.Add(1500 * time.Millisecond), t0.Add(1750 * time.Millisecond)}
	now := func() time.Time { c := clock[0]; clock = clock[1:]; return c }

	p := startAt(log, "lab up", now)
	p.Mark("preflight")
	p.Mark("network")

	type line struct {
		Msg, Of, Phase string
		Seconds        float64
	}
	var got []line
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var v line
		require.NoError(t, json.Unmarshal([]byte(l), &v))
		got = append(got, v)
	}
	assert.Equal(t, []line{
		{Msg: Msg, Of: "lab up", Phase: "preflight", Seconds: 1.5},
		{Msg: Msg, Of: "lab up", Phase: "network", Seconds: 0.25},
	}, got)
}

func TestPhasesSayNothingAboveDebug(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	Start(log, "lab up").Mark("preflight")
	Start(nil, "lab up").Mark("preflight") // a nil log is allowed
	assert.Empty(t, buf.String())
}

func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want float64
	}{
		{0, 0},
		{1234567 * time.Microsecond, 1.235},
		{40 * time.Second, 40},
	} {
		assert.Equal(t, tc.want, Seconds(tc.d), tc.d.String())
	}
}
