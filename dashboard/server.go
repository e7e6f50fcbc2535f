package dashboard

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"sync"
	"time"
)

//go:embed assets
var assets embed.FS

// DefaultListen is where the dashboard serves unless told otherwise.
const DefaultListen = "127.0.0.1:8686"

// Options configure a Server.
type Options struct {
	Source Source
	// Interval between polls of Source (default 1 s).
	Interval time.Duration
	// Token, when set, is required on every /api/ request (Authorization:
	// Bearer, or ?token= for the page and its event stream).
	Token string
	// TrainerToken, when set with Faults, opens the trainer's view
	// (/api/trainer/faults, faults.go) to requests that carry it.
	TrainerToken string
	Faults       FaultSource
	Log          *slog.Logger
}

// Server serves the page, the JSON endpoints and the event stream. It polls
// its Source and pushes only what changed to the connected pages.
type Server struct {
	opts Options
	mux  *http.ServeMux

	refreshMu sync.Mutex // one Refresh at a time

	mu    sync.RWMutex
	ready bool
	order []string          // lab names, sorted
	views map[string][]byte // lab name -> JSON of its LabView
	// hosts is the JSON of {"hosts":[...]} (HostSource), nil without one.
	hosts []byte
	subs  map[*subscriber]struct{}
}

type subscriber struct {
	lab string // "" for every lab
	ch  chan []byte
}

// New builds a Server; Run polls, Handler serves.
func New(opts Options) *Server {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, views: map[string][]byte{}, subs: map[*subscriber]struct{}{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.asset("index.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /app.js", s.asset("app.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /app.css", s.asset("app.css", "text/css; charset=utf-8"))
	mux.HandleFunc("GET /favicon.svg", s.asset("favicon.svg", "image/svg+xml"))
	mux.HandleFunc("GET /api/labs", s.auth(s.handleLabs))
	mux.HandleFunc("GET /api/labs/{name}", s.auth(s.handleLab))
	mux.HandleFunc("GET /api/hosts", s.auth(s.handleHosts))
	mux.HandleFunc("GET /api/events", s.auth(s.handleEvents))
	mux.HandleFunc("GET /api/trainer/faults", s.auth(s.trainer(s.handleTrainerFaults)))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "the dashboard is read-only: only GET")
			return
		}
		writeError(w, http.StatusNotFound, "not found: the dashboard serves /, /api/labs, /api/labs/NAME, /api/hosts, /api/events and the trainer's /api/trainer/faults")
	})
	s.mux = mux
	return s
}

// Handler is the dashboard's HTTP handler.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		// Without a token the dashboard trusts only loopback: a page on some
		// other site that rebinds its name to 127.0.0.1 must not read it.
		if s.opts.Token == "" && !loopbackHost(r.Host) {
			writeError(w, http.StatusForbidden, "this dashboard answers only to localhost, 127.0.0.1 or [::1]; to serve other hosts, listen there with --listen (a token is then required)")
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

// Run polls the Source every Interval until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	t := time.NewTicker(s.opts.Interval)
	defer t.Stop()
	for {
		if _, err := s.Refresh(ctx); err != nil && ctx.Err() == nil {
			s.opts.Log.Warn("dashboard poll failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Refresh polls the Source once and pushes every lab whose view changed
// (and every lab that disappeared) to the subscribers. It returns how many
// labs changed.
func (s *Server) Refresh(ctx context.Context) (int, error) {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	views, err := s.opts.Source.Snapshot(ctx)
	if err != nil {
		return 0, err
	}
	next := make(map[string][]byte, len(views))
	order := make([]string, 0, len(views))
	for i := range views {
		data, err := json.Marshal(&views[i])
		if err != nil {
			return 0, fmt.Errorf("encode lab %s: %w", views[i].Name, err)
		}
		next[views[i].Name] = data
		order = append(order, views[i].Name)
	}
	hosts, err := s.hostsJSON(ctx)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if hosts != nil && !bytes.Equal(hosts, s.hosts) {
		s.hosts = hosts
		s.publish("", event("hosts", hosts))
	}
	changed := 0
	for _, name := range order {
		if old, ok := s.views[name]; ok && bytes.Equal(old, next[name]) {
			continue
		}
		changed++
		s.publish(name, event("lab", next[name]))
	}
	for name := range s.views {
		if _, ok := next[name]; !ok {
			changed++
			gone, _ := json.Marshal(map[string]string{"name": name})
			s.publish(name, event("removed", gone))
		}
	}
	s.views, s.order, s.ready = next, sortedNames(order), true
	return changed, nil
}

func sortedNames(names []string) []string { return slices.Sorted(slices.Values(names)) }

// hostsJSON is {"hosts":[...]} of the Source's hosts, nil when it tells
// none (it is no HostSource).
func (s *Server) hostsJSON(ctx context.Context) ([]byte, error) {
	hs, ok := s.opts.Source.(HostSource)
	if !ok {
		return nil, nil
	}
	hosts, err := hs.Hosts(ctx)
	if err != nil {
		return nil, err
	}
	if hosts == nil {
		hosts = []HostView{}
	}
	return json.Marshal(map[string][]HostView{"hosts": hosts})
}

func (s *Server) handleHosts(w http.ResponseWriter, r *http.Request) {
	if err := s.ensureReady(r.Context()); err != nil {
		writeError(w, http.StatusServiceUnavailable, "reading the labs failed: "+err.Error())
		return
	}
	s.mu.RLock()
	body := s.hosts
	s.mu.RUnlock()
	if body == nil {
		body = []byte(`{"hosts":[]}`)
	}
	writeJSON(w, body)
}

// publish sends msg to every subscriber of the lab ("": of every lab)
// (s.mu held). A
// subscriber too slow to keep up is dropped; its page reconnects and gets
// a fresh snapshot.
func (s *Server) publish(name string, msg []byte) {
	for sub := range s.subs {
		if sub.lab != "" && sub.lab != name {
			continue
		}
		select {
		case sub.ch <- msg:
		default:
			delete(s.subs, sub)
			close(sub.ch)
		}
	}
}

func event(kind string, data []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(data) + len(kind) + 16)
	b.WriteString("event: ")
	b.WriteString(kind)
	b.WriteString("\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	return b.Bytes()
}

// ensureReady polls once when no poll has finished yet.
func (s *Server) ensureReady(ctx context.Context) error {
	s.mu.RLock()
	ready := s.ready
	s.mu.RUnlock()
	if ready {
		return nil
	}
	_, err := s.Refresh(ctx)
	return err
}

// labsJSON is {"labs":[...]} of the labs named (every lab when name is "").
func (s *Server) labsJSON(name string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"labs":[`)
	first := true
	for _, n := range s.order {
		if name != "" && n != name {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.Write(s.views[n])
	}
	b.WriteString("]}")
	return b.Bytes()
}

func (s *Server) handleLabs(w http.ResponseWriter, r *http.Request) {
	if err := s.ensureReady(r.Context()); err != nil {
		writeError(w, http.StatusServiceUnavailable, "reading the labs failed: "+err.Error())
		return
	}
	s.mu.RLock()
	body := s.labsJSON("")
	s.mu.RUnlock()
	writeJSON(w, body)
}

var errUnknownLab = errors.New("unknown lab")

// labNameRE is the lab name rule of the spec (lab.Spec.Validate).
var labNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)

const badName = "invalid lab name: a lab name is 1-32 lowercase letters, digits and '-' (see `bootlab lab list`)"

func (s *Server) handleLab(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !labNameRE.MatchString(name) {
		writeError(w, http.StatusBadRequest, badName)
		return
	}
	if err := s.ensureReady(r.Context()); err != nil {
		writeError(w, http.StatusServiceUnavailable, "reading the labs failed: "+err.Error())
		return
	}
	s.mu.RLock()
	body, ok := s.views[name]
	s.mu.RUnlock()
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("%s %q: `bootlab lab list` shows the labs on this host", errUnknownLab, name))
		return
	}
	writeJSON(w, body)
}

// handleEvents streams server-sent events: a snapshot of every lab (or of
// ?lab=NAME) on connect, then each lab whose view changed.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("lab")
	if name != "" && !labNameRE.MatchString(name) {
		writeError(w, http.StatusBadRequest, badName)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "streaming is not supported by this connection")
		return
	}
	if err := s.ensureReady(r.Context()); err != nil {
		writeError(w, http.StatusServiceUnavailable, "reading the labs failed: "+err.Error())
		return
	}
	sub := &subscriber{lab: name, ch: make(chan []byte, 64)}
	s.mu.Lock()
	if _, known := s.views[name]; name != "" && !known {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, fmt.Sprintf("%s %q: `bootlab lab list` shows the labs on this host", errUnknownLab, name))
		return
	}
	s.subs[sub] = struct{}{}
	snapshot := event("snapshot", s.labsJSON(name))
	if name == "" && s.hosts != nil {
		snapshot = append(snapshot, event("hosts", s.hosts)...)
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if _, still := s.subs[sub]; still {
			delete(s.subs, sub)
			close(sub.ch)
		}
		s.mu.Unlock()
	}()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(append([]byte("retry: 1000\n\n"), snapshot...)); err != nil {
		return
	}
	fl.Flush()
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case msg, open := <-sub.ch:
			if !open {
				return // too slow: the page reconnects and gets a snapshot
			}
			if _, err := w.Write(msg); err != nil {
				return
			}
			fl.Flush()
		case <-ping.C:
			if _, err := w.Write([]byte(": ping\n\n")); err != nil {
				return
			}
			fl.Flush()
		}
	}
}
