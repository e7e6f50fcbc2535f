package dashboard

import (
	"bufio"
	"context"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/class"
	"github.com/bootlab/bootlab/lab/spec"
)

// HostView is one hypervisor host the labs run on, with its load: what
// the class view groups the labs by (GET /api/hosts, event "hosts").
type HostView struct {
	// Name is the host's name in its class's hosts, else the URI's host
	// ("localhost" for this machine's daemon).
	Name string `json:"name"`
	// URI is the libvirt URI of the labs on it (LabView.URI).
	URI  string `json:"uri"`
	Labs int    `json:"labs"`
	// The load, when the host's machine can be read (not the test
	// driver): memory in use (total less available, to 100 MiB) and the
	// CPUs busy since the last reading (whole percent of all of them).
	CPUs             int     `json:"cpus,omitempty"`
	CPUBusyPercent   float64 `json:"cpuBusyPercent,omitempty"`
	MemoryUsedBytes  uint64  `json:"memoryUsedBytes,omitempty"`
	MemoryTotalBytes uint64  `json:"memoryTotalBytes,omitempty"`
	// Error says why the host or its load could not be read.
	Error string `json:"error,omitempty"`
}

// HostSource is a Source that also reports the hosts its labs run on.
type HostSource interface {
	Hosts(ctx context.Context) ([]HostView, error)
}

// hostLoadEvery is how often a host's load is read: over SSH for a
// remote host, two files a reading.
const hostLoadEvery = 5 * time.Second

// hostLoads is the Collector's memory of its hosts between snapshots.
type hostLoads struct {
	mu sync.Mutex
	// labs are the labs of the last snapshot, by URI (name: the class
	// host's, when one has it).
	names map[string]string
	count map[string]int
	order []string
	// last is each host's last reading, cpu its /proc/stat totals then.
	last map[string]HostView
	cpu  map[string][2]uint64
	read map[string]time.Time
	// records are the class placements read this snapshot, by class.
	records map[string]map[string]class.Placed
}

// placeHosts sets each view's class and host (its class's placement
// record names it) and remembers the hosts of the snapshot.
func (c *Collector) placeHosts(views []LabView, labs []lab.Summary) {
	h := &c.hosts
	h.mu.Lock()
	defer h.mu.Unlock()
	h.names, h.count, h.order, h.records = map[string]string{}, map[string]int{}, nil, map[string]map[string]class.Placed{}
	home := c.Home
	if home == "" {
		home = spec.DefaultHome()
	}
	for i := range views {
		v, l := &views[i], &labs[i]
		if l.State != nil {
			v.Class = l.State.Class
		}
		v.Host = hostLabel(v.URI)
		if v.Class != "" {
			rec, ok := h.records[v.Class]
			if !ok {
				rec, _ = class.ReadPlacement(filepath.Join(home, "classes", v.Class))
				h.records[v.Class] = rec
			}
			if p, ok := rec[v.Name]; ok && p.Host != "" {
				v.Host = p.Host
			}
		}
		if v.URI == "" {
			continue
		}
		if _, seen := h.count[v.URI]; !seen {
			h.order = append(h.order, v.URI)
			h.names[v.URI] = v.Host
		}
		h.count[v.URI]++
	}
}

// Hosts are the hosts of the last snapshot with their load, read at most
// every hostLoadEvery (the last reading otherwise).
func (c *Collector) Hosts(ctx context.Context) ([]HostView, error) {
	h := &c.hosts
	h.mu.Lock()
	order := append([]string(nil), h.order...)
	h.mu.Unlock()
	out := make([]HostView, 0, len(order))
	for _, uri := range order {
		out = append(out, c.hostView(ctx, uri))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// hostView is one host's view: its labs now, its load as last read.
func (c *Collector) hostView(ctx context.Context, uri string) HostView {
	h := &c.hosts
	h.mu.Lock()
	v := HostView{Name: h.names[uri], URI: uri, Labs: h.count[uri]}
	last, fresh := h.last[uri], time.Since(h.read[uri]) < hostLoadEvery
	h.mu.Unlock()
	if fresh {
		v.CPUs, v.CPUBusyPercent, v.MemoryUsedBytes, v.MemoryTotalBytes, v.Error = last.CPUs, last.CPUBusyPercent, last.MemoryUsedBytes, last.MemoryTotalBytes, last.Error
		return v
	}
	c.readLoad(ctx, &v)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last == nil {
		h.last = map[string]HostView{}
	}
	if h.read == nil {
		h.read = map[string]time.Time{}
	}
	h.last[uri], h.read[uri] = v, time.Now()
	return v
}

// readLoad reads the load of v's host through its hypervisor's machine.
func (c *Collector) readLoad(ctx context.Context, v *HostView) {
	hv, err := c.hypervisor(ctx, v.URI)
	if err != nil {
		v.Error = "unreachable: " + err.Error()
		return
	}
	if !hv.Capabilities().RunsGuests {
		return // the test driver: no machine of its own
	}
	m := hv.Host()
	meminfo, err := m.ReadFile(ctx, "/proc/meminfo")
	if err == nil {
		total, avail := meminfoField(meminfo, "MemTotal:"), meminfoField(meminfo, "MemAvailable:")
		const step = 100 << 20
		v.MemoryTotalBytes, v.MemoryUsedBytes = total, (total-min(total, avail))/step*step
	}
	stat, serr := m.ReadFile(ctx, "/proc/stat")
	if err == nil {
		err = serr
	}
	if err != nil {
		v.Error = "load not read: " + err.Error()
		return
	}
	busy, total, cpus := cpuTimes(stat)
	v.CPUs = cpus
	h := &c.hosts
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cpu == nil {
		h.cpu = map[string][2]uint64{}
	}
	if prev, ok := h.cpu[v.URI]; ok && total > prev[1] {
		v.CPUBusyPercent = float64(100 * (busy - min(busy, prev[0])) / (total - prev[1]))
	}
	h.cpu[v.URI] = [2]uint64{busy, total}
}

// meminfoField is one /proc/meminfo line ("MemTotal:") in bytes.
func meminfoField(data []byte, field string) uint64 {
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == field {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpuTimes reads /proc/stat: the busy and total jiffies of all CPUs
// (idle and iowait are not busy), and how many CPUs there are.
func cpuTimes(data []byte) (busy, total uint64, cpus int) {
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if f[0] != "cpu" {
			cpus++
			continue
		}
		for i, s := range f[1:] {
			n, _ := strconv.ParseUint(s, 10, 64)
			total += n
			if i != 3 && i != 4 { // idle, iowait
				busy += n
			}
		}
	}
	return busy, total, cpus
}

// hostLabel names the host of a libvirt URI: its host part, or
// "localhost" for this machine's daemon (the URI itself for another
// driver on this machine).
func hostLabel(uri string) string {
	u, err := url.Parse(uri)
	switch {
	case uri == "":
		return ""
	case err != nil:
		return uri
	case u.Hostname() != "":
		return u.Hostname()
	case strings.HasPrefix(u.Scheme, "qemu"):
		return "localhost"
	}
	u.RawQuery = ""
	return u.String()
}
