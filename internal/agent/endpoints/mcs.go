package endpoints

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/wire"
)

// MCSMode is which Machine Config Server the stand-in imitates.
type MCSMode int

const (
	// MCSBootstrap serves only the master (and arbiter) pools and refuses
	// the others with HTTP 500, like the bootstrap MCS.
	MCSBootstrap MCSMode = iota
	// MCSCluster serves any pool it has a config for, like the in-cluster MCS.
	MCSCluster
)

// MCS is a Machine Config Server stand-in: GET|HEAD /config/<pool> and
// /healthz, with the status codes and Accept-header handling of the real
// one (reference §7.1, §7.4). Configs are spec-3.2 JSON.
type MCS struct {
	Mode    MCSMode
	Configs map[string][]byte
	Log     *slog.Logger
	// Node, when set, is sent in the wire.NodeHeader header so a client behind
	// the load balancer can see which node answered.
	Node string
	// OnServe, when set, is called after each /config request.
	OnServe func(pool, remote string, code int)

	mu     sync.Mutex
	served map[string]map[string]bool // pool -> remote host -> true
}

// Served returns, per pool, the sorted hosts that got a config (HTTP 200).
func (m *MCS) Served() map[string][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]string{}
	for p, hosts := range m.served {
		for h := range hosts {
			out[p] = append(out[p], h)
		}
		sort.Strings(out[p])
	}
	return out
}

func (m *MCS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m.Node != "" {
		w.Header().Set(wire.NodeHeader, m.Node)
	}
	if r.URL.Path == "/healthz" {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/config/") {
		http.NotFound(w, r)
		return
	}
	pool := path.Base(r.URL.Path)
	code := m.serveConfig(w, r, pool)
	if code == http.StatusOK {
		m.mu.Lock()
		if m.served == nil {
			m.served = map[string]map[string]bool{}
		}
		if m.served[pool] == nil {
			m.served[pool] = map[string]bool{}
		}
		host := r.RemoteAddr
		if i := strings.LastIndex(host, ":"); i > 0 {
			host = host[:i]
		}
		m.served[pool][host] = true
		m.mu.Unlock()
	}
	if m.OnServe != nil {
		m.OnServe(pool, r.RemoteAddr, code)
	}
}

func (m *MCS) serveConfig(w http.ResponseWriter, r *http.Request, pool string) int {
	if m.Log != nil {
		m.Log.Info(fmt.Sprintf("Pool %q requested by address:%q User-Agent:%q Accept-Header: %q",
			pool, r.RemoteAddr, r.UserAgent(), r.Header.Get("Accept")))
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return http.StatusMethodNotAllowed
	}
	major, err := SpecFromAccept(r.Header.Values("Accept"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return http.StatusBadRequest
	}
	if m.Mode == MCSBootstrap && pool != "master" && pool != "arbiter" {
		msg := fmt.Sprintf("refusing to serve bootstrap configuration to pool %q", pool)
		http.Error(w, "could not fetch config , err: "+msg, http.StatusInternalServerError)
		return http.StatusInternalServerError
	}
	data, ok := m.Configs[pool]
	if !ok {
		http.Error(w, fmt.Sprintf("could not fetch pool %s", pool), http.StatusNotFound)
		return http.StatusNotFound
	}
	if major == 2 {
		data, err = downConvert(data)
		if err != nil {
			http.Error(w, "could not convert config to spec 2.2.0: "+err.Error(), http.StatusInternalServerError)
			return http.StatusInternalServerError
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(data)
	}
	return http.StatusOK
}

// SpecFromAccept picks the served Ignition spec major version from Accept
// headers as the MCS does: the highest-q application/vnd.coreos.ignition+json
// with a version parameter; 2.x >= 2.2 gives 2, 3.x gives 3, any other
// version is an error (HTTP 400). No Ignition entry with a version means the
// client is not Ignition (curl, a browser): spec 2.2.
func SpecFromAccept(values []string) (int, error) {
	type entry struct {
		version string
		q       float64
		idx     int
	}
	var entries []entry
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			mt, params, err := mime.ParseMediaType(part)
			if err != nil || mt != "application/vnd.coreos.ignition+json" {
				continue
			}
			ver, ok := params["version"]
			if !ok {
				continue
			}
			q := 1.0
			if qs, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(qs, 64); err == nil {
					q = f
				}
			}
			entries = append(entries, entry{version: ver, q: q, idx: len(entries)})
		}
	}
	if len(entries) == 0 {
		return 2, nil
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].q > entries[j].q })
	ver := entries[0].version
	parts := strings.Split(ver, ".")
	major, err := strconv.Atoi(parts[0])
	minor := 0
	if err == nil && len(parts) > 1 {
		minor, err = strconv.Atoi(parts[1])
	}
	switch {
	case err != nil:
		return 0, fmt.Errorf("invalid Ignition spec version %q in Accept header", ver)
	case major == 3:
		return 3, nil
	case major == 2 && minor >= 2:
		return 2, nil
	}
	return 0, fmt.Errorf("unsupported Ignition spec version %q in Accept header", ver)
}

// downConvert renders a spec-3.2 config carrying only files as spec 2.2.0,
// which is what the MCS serves to clients that are not Ignition.
func downConvert(data []byte) ([]byte, error) {
	cfg, err := ignition.Parse(data)
	if err != nil {
		return nil, err
	}
	if len(cfg.Ignition.Config.Merge) > 0 || cfg.Ignition.Config.Replace.Source != nil ||
		len(cfg.Storage.Directories) > 0 || len(cfg.Storage.Links) > 0 || len(cfg.Systemd.Units) > 0 {
		return nil, fmt.Errorf("only files can be down-converted by this stand-in")
	}
	type contents struct {
		Source string `json:"source"`
	}
	type file struct {
		Filesystem string   `json:"filesystem"`
		Path       string   `json:"path"`
		Contents   contents `json:"contents"`
		Mode       *int     `json:"mode,omitempty"`
		Overwrite  *bool    `json:"overwrite,omitempty"`
	}
	var v2 struct {
		Ignition struct {
			Version string `json:"version"`
		} `json:"ignition"`
		Storage struct {
			Files []file `json:"files,omitempty"`
		} `json:"storage"`
	}
	v2.Ignition.Version = "2.2.0"
	for _, f := range cfg.Storage.Files {
		v2.Storage.Files = append(v2.Storage.Files, file{
			Filesystem: "root", Path: f.Path, Contents: contents{Source: deref(f.Contents.Source)},
			Mode: f.Mode, Overwrite: f.Overwrite,
		})
	}
	return json.Marshal(v2)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
