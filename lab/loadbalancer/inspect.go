package loadbalancer

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bootlab/bootlab/lab/host"
)

// Status is what Inspect sees of the running load balancer.
type Status struct {
	Running  bool            `json:"running"`
	PID      int             `json:"pid,omitempty"`
	Backends []BackendStatus `json:"backends"`
}

// BackendStatus is one server of one frontend as haproxy's health checks see it.
type BackendStatus struct {
	Frontend string `json:"frontend"`
	Server   string `json:"server"`
	Address  string `json:"address"`
	// Status is haproxy's own word: UP, DOWN, MAINT, "no check", or a
	// transition such as "UP 1/3" (up, one failed check of three) or "DOWN 1/2".
	Status string `json:"status"`
	// LastCheck is the last check's result, e.g. "L7OK 200" or "L4CON Connection refused".
	LastCheck string `json:"lastCheck,omitempty"`
}

// Settling is true while haproxy is moving the server between up and down
// ("DOWN 1/2": one more good check and it is up; "UP 1/3": two more failed
// checks and it is down): its status changes by itself within a few of
// haproxy's checks.
func (b BackendStatus) Settling() bool {
	word, count, ok := strings.Cut(b.Status, " ")
	if !ok || (word != "UP" && word != "DOWN") {
		return false
	}
	n, m, ok := strings.Cut(count, "/")
	return ok && n != "" && m != "" && strings.Trim(n+m, "0123456789") == ""
}

// Proven is true when haproxy sends traffic to the server on the strength
// of a health check it passed (or to a server it does not check). haproxy
// starts every server as up before its first check: until then it sends
// connections to a VM that may still be booting.
func (b BackendStatus) Proven() bool {
	if b.Status == "no check" {
		return true
	}
	return b.Up() && (strings.HasPrefix(b.LastCheck, "L4OK") || strings.HasPrefix(b.LastCheck, "L6OK") || strings.HasPrefix(b.LastCheck, "L7OK"))
}

// Up is true when haproxy sends traffic to the server.
func (b BackendStatus) Up() bool {
	return b.Status == "UP" || strings.HasPrefix(b.Status, "UP ") || b.Status == "no check"
}

// Inspect reports whether our haproxy runs and, when it does, every server's
// health read from `show stat` on the admin socket.
func Inspect(ctx context.Context, c Config) (*Status, error) {
	pid, ok := runningPID(ctx, c)
	if !ok {
		return &Status{Backends: []BackendStatus{}}, nil
	}
	st := &Status{Running: true, PID: pid}
	raw, err := adminCommand(ctx, c.host(), c.SocketPath(), "show stat")
	if err != nil {
		return st, err
	}
	backends, err := parseStat(raw)
	if err != nil {
		return st, fmt.Errorf("parse `show stat` from %s: %w", c.SocketPath(), err)
	}
	st.Backends = backends
	return st, nil
}

// adminCommand sends one command to the haproxy admin socket and returns the answer.
func adminCommand(ctx context.Context, h host.Host, socket, command string) (string, error) {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	conn, err := h.Dial(dctx, "unix", socket)
	cancel()
	if err != nil {
		return "", fmt.Errorf("haproxy admin socket %s on %s: %w (is haproxy running? `bootlab lab up` starts it)", socket, h.Name(), err)
	}
	defer conn.Close()
	// A tunnelled socket has no deadlines: ctx ends the call by closing it.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	deadline := time.Now().Add(10 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	if _, err := io.WriteString(conn, command+"\n"); err != nil {
		return "", fmt.Errorf("haproxy admin socket %s: send %q: %w", socket, command, err)
	}
	// Without "prompt" haproxy answers one command and closes the connection.
	out, err := io.ReadAll(conn)
	if err != nil {
		return "", fmt.Errorf("haproxy admin socket %s: read answer to %q: %w", socket, command, err)
	}
	return string(out), nil
}

// parseStat turns haproxy's `show stat` CSV into one entry per server,
// leaving out the FRONTEND/BACKEND aggregate rows and the stats listener.
func parseStat(raw string) ([]BackendStatus, error) {
	raw = strings.TrimPrefix(strings.TrimSpace(raw), "# ")
	if raw == "" {
		return nil, fmt.Errorf("empty answer")
	}
	r := csv.NewReader(strings.NewReader(raw))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, need := range []string{"pxname", "svname", "status"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("no %q column in header %q", need, strings.Join(rows[0], ","))
		}
	}
	get := func(row []string, name string) string {
		i, ok := col[name]
		if !ok || i >= len(row) {
			return ""
		}
		return row[i]
	}
	var out []BackendStatus
	for _, row := range rows[1:] {
		px, sv := get(row, "pxname"), get(row, "svname")
		if px == "stats" || sv == "FRONTEND" || sv == "BACKEND" || sv == "" {
			continue
		}
		// haproxy marks a check running right now with "* " before the
		// last one's result ("* L7OK"): the result is what is reported.
		last := strings.TrimSpace(strings.TrimPrefix(get(row, "check_status"), "* ") + " " + get(row, "last_chk"))
		out = append(out, BackendStatus{
			Frontend:  px,
			Server:    sv,
			Address:   get(row, "addr"),
			Status:    get(row, "status"),
			LastCheck: last,
		})
	}
	return out, nil
}
