package dashboard

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/bootlab/bootlab/lab"
)

// The trainer's view (issue 55): which fault `lab break` or `class break`
// set on each lab. The learners' views (every other endpoint, the page
// without the trainer's token) show a fault's symptoms, never its name:
// this file is the only one of the dashboard that reads the faults
// (internal/archtest).

// FaultSource gives the faults set on the labs.
type FaultSource interface {
	Faults(ctx context.Context) ([]FaultView, error)
}

// FaultView is a fault set on a lab, as the trainer's view shows it.
type FaultView struct {
	Lab      string    `json:"lab"`
	Name     string    `json:"name"`
	BrokenAt time.Time `json:"brokenAt"`
	// Minutes is how long it has been set.
	Minutes int `json:"minutes"`
}

// Faults reads the faults set on the labs of the last snapshot, sorted by
// lab then fault; a lab whose record cannot be read is skipped.
func (c *Collector) Faults(ctx context.Context) ([]FaultView, error) {
	c.mu.Lock()
	specs := c.specs
	c.mu.Unlock()
	out := []FaultView{}
	now := time.Now()
	for name, s := range specs {
		active, err := lab.ActiveFaultsOf(s)
		if err != nil {
			c.Log.Warn("dashboard: the lab's record of faults cannot be read", "lab", name, "err", err)
			continue
		}
		for _, a := range active {
			out = append(out, FaultView{Lab: name, Name: a.Name, BrokenAt: a.At, Minutes: int(now.Sub(a.At).Minutes())})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Lab != out[j].Lab {
			return out[i].Lab < out[j].Lab
		}
		return out[i].Name < out[j].Name
	})
	return out, ctx.Err()
}

// trainer requires the trainer's token (?trainer= or the
// X-Bootlab-Trainer header) on h, compared in constant time; without a
// trainer token configured the view does not exist.
func (s *Server) trainer(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.opts.TrainerToken == "" || s.opts.Faults == nil {
			writeError(w, http.StatusNotFound, "this dashboard has no trainer's view")
			return
		}
		got := r.URL.Query().Get("trainer")
		if hd := strings.TrimSpace(r.Header.Get("X-Bootlab-Trainer")); hd != "" {
			got = hd
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.TrainerToken)) != 1 {
			writeError(w, http.StatusForbidden, "the trainer's view needs the trainer's token: open the trainer's URL `bootlab dashboard` printed (it ends in trainer=...)")
			return
		}
		h(w, r)
	}
}

// handleTrainerFaults is GET /api/trainer/faults: {"faults": [...]}.
func (s *Server) handleTrainerFaults(w http.ResponseWriter, r *http.Request) {
	fs, err := s.opts.Faults.Faults(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "the faults could not be read: "+Sanitize(err.Error()))
		return
	}
	body, _ := json.Marshal(map[string]any{"faults": fs})
	writeJSON(w, body)
}
