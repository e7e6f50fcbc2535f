package check

import "encoding/json"

// plain is Result without its JSON methods, so they can use the default
// encoding of its fields.
type plain Result

// legacy are the four booleans a check carried before it had one State.
// Schema 1 documents (-o json, the dashboard's API) keep writing them, so
// a reader of "ok" or "pending" still works, and a document written before
// "state" existed is read by deriving the state from them.
type legacy struct {
	OK      bool `json:"ok"`
	Warning bool `json:"warning,omitempty"`
	Skipped bool `json:"skipped,omitempty"`
	Pending bool `json:"pending,omitempty"`
}

func legacyOf(s State) legacy {
	return legacy{OK: s.Passed(), Warning: s == StateWarning, Skipped: s == StateSkipped, Pending: s == StatePending}
}

// state is the State the four booleans meant: skipped and pending first
// (they were never OK), then a caveat, then OK or not.
func (l legacy) state() State {
	switch {
	case l.Skipped:
		return StateSkipped
	case l.Pending:
		return StatePending
	case l.OK && l.Warning:
		return StateWarning
	}
	return PassIf(l.OK)
}

// MarshalJSON writes the fields of Result, "state" normalised (an unknown
// state is "failed") and the legacy booleans derived from it.
func (r Result) MarshalJSON() ([]byte, error) {
	if !r.State.Known() {
		r.State = StateFailed
	}
	return json.Marshal(struct {
		plain
		legacy
	}{plain(r), legacyOf(r.State)})
}

// UnmarshalJSON reads a check with "state", or one without it (written
// before State existed) from its legacy booleans.
func (r *Result) UnmarshalJSON(b []byte) error {
	var w struct {
		plain
		legacy
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = Result(w.plain)
	if r.State == "" {
		r.State = w.legacy.state()
	}
	return nil
}
