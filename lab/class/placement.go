package class

import (
	"fmt"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/bootlab/bootlab/lab/preflight"
)

// PlaceHost is one host as placement sees it: its cap, the room it has
// now, and whether it can be reached at all.
type PlaceHost struct {
	Name string
	// MaxLabs caps the class's labs there (nil: no cap).
	MaxLabs *int
	// Free is the memory and disk free for labs now (nil: not measured,
	// no bound: libvirt's test driver runs nothing).
	Free *preflight.Needs
	// DiskDir is where Free's disk was measured (for messages).
	DiskDir string
	// Down is why the host cannot be reached: it takes no new lab.
	Down error
}

// PlaceLab is one lab of the class as placement sees it.
type PlaceLab struct {
	Name  string
	Needs preflight.Needs
	// Host is the index of the host the lab is on already (built, or
	// placed by an earlier class up): it stays there. -1 places it.
	Host int
	// Built is set when the lab exists complete: its memory and disk are
	// in use already, so they are not taken from its host's Free again.
	Built bool
}

// NotFitError is a class whose labs do not all fit on its hosts: how
// many fit on each host and in all, and what stops each host.
type NotFitError struct {
	// ToPlace labs needed a host; Placed found one.
	ToPlace, Placed int
	// AlreadyPlaced labs were on their hosts before.
	AlreadyPlaced int
	Hosts         []HostFit
}

// HostFit is how many of the labs to place fit on one host alone, and
// what stops it taking more.
type HostFit struct {
	Name  string
	Fit   int
	Limit string
}

func (e *NotFitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s to place", plural(e.ToPlace, "lab"))
	if e.AlreadyPlaced > 0 {
		fmt.Fprintf(&b, " beside the %d already placed", e.AlreadyPlaced)
	}
	fits := fmt.Sprintf("only %d fit", e.Placed)
	if e.Placed == 1 {
		fits = "only 1 fits"
	}
	fmt.Fprintf(&b, ", %s:", fits)
	for i, h := range e.Hosts {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %d on %s (%s)", h.Fit, h.Name, h.Limit)
	}
	b.WriteString("; add hosts, raise maxLabs, lower learners, give the template smaller nodes, or free memory and disk (nothing was created)")
	return b.String()
}

// Place gives every lab a host: a lab on a host already stays there;
// the others go, in order, to a host they fit on (under its cap, in its
// free memory and disk, reachable). mode spread picks the host with the
// largest share still free of the class's labs it holds (those there
// before and the room it had for more; ties: fewer of the class's labs,
// then the first listed), so labs spread in proportion to what each host
// holds; mode pack picks the first listed.
// When a lab fits nowhere the error is a *NotFitError. It reads nothing
// but its arguments.
func Place(mode Placement, hosts []PlaceHost, labs []PlaceLab) ([]int, error) {
	out := make([]int, len(labs))
	count := make([]int, len(hosts))
	free := make([]*preflight.Needs, len(hosts))
	for i, h := range hosts {
		if h.Free != nil {
			f := *h.Free
			free[i] = &f
		}
	}
	placedBefore := 0
	for i, l := range labs {
		out[i] = l.Host
		if l.Host < 0 || l.Host >= len(hosts) {
			out[i] = -1
			continue
		}
		placedBefore++
		count[l.Host]++
		if !l.Built {
			take(free[l.Host], l.Needs)
		}
	}
	start := make([]int, len(hosts)) // labs each host holds, for spread's share
	var first *PlaceLab
	for i := range labs {
		if out[i] < 0 {
			first = &labs[i]
			break
		}
	}
	if first == nil {
		return out, nil
	}
	for h := range hosts {
		// What the host holds of the class: the labs there and its room.
		start[h] = room(hosts[h], free[h], count[h], first.Needs)
		if start[h] != math.MaxInt {
			start[h] += count[h]
		}
	}
	failed := false
	toPlace := 0
	for i, l := range labs {
		if out[i] >= 0 {
			continue
		}
		toPlace++
		best := -1
		for h := range hosts {
			if room(hosts[h], free[h], count[h], l.Needs) < 1 {
				continue
			}
			if best < 0 || mode == PlacementSpread && better(hosts, free, count, start, l.Needs, h, best) {
				best = h
			}
			if mode == PlacementPack {
				break
			}
		}
		if best < 0 {
			failed = true
			continue
		}
		out[i] = best
		count[best]++
		take(free[best], l.Needs)
	}
	if !failed {
		return out, nil
	}
	return nil, notFit(hosts, labs, out, toPlace, placedBefore)
}

// notFit explains a placement that failed: how many of the labs to place
// fit on each host alone (in order, as many as its room takes), and what
// stops it.
func notFit(hosts []PlaceHost, labs []PlaceLab, out []int, toPlace, placedBefore int) *NotFitError {
	e := &NotFitError{ToPlace: toPlace, AlreadyPlaced: placedBefore}
	for i := range labs {
		if labs[i].Host < 0 && out[i] >= 0 {
			e.Placed++
		}
	}
	for h, host := range hosts {
		var f *preflight.Needs
		if host.Free != nil {
			c := *host.Free
			f = &c
		}
		n := 0
		for _, l := range labs {
			if l.Host == h {
				n++
				if !l.Built {
					take(f, l.Needs)
				}
			}
		}
		already := n
		var had *preflight.Needs
		if f != nil {
			c := *f
			had = &c
		}
		fit := 0
		limit := "room for all of them"
		for _, l := range labs {
			if l.Host >= 0 {
				continue
			}
			if room(host, f, n, l.Needs) < 1 {
				limit = limitOf(host, f, had, n, already, l.Needs)
				break
			}
			fit++
			n++
			take(f, l.Needs)
		}
		e.Hosts = append(e.Hosts, HostFit{Name: host.Name, Fit: fit, Limit: limit})
	}
	return e
}

// limitOf says what keeps host, with count of the class's labs (already
// of them there before) and free left of the room it had, from taking a
// lab needing n: its state, its cap, then memory, then disk.
func limitOf(host PlaceHost, free, had *preflight.Needs, count, already int, n preflight.Needs) string {
	switch {
	case host.Down != nil:
		return "unreachable: " + oneLine(host.Down.Error())
	case host.MaxLabs != nil && count >= *host.MaxLabs && already > 0:
		return fmt.Sprintf("maxLabs %d, %d of the class there already", *host.MaxLabs, already)
	case host.MaxLabs != nil && count >= *host.MaxLabs:
		return fmt.Sprintf("maxLabs %d", *host.MaxLabs)
	case free != nil && n.MemoryBytes > free.MemoryBytes:
		return fmt.Sprintf("memory: %s available, %s a lab", preflight.HumanBytes(had.MemoryBytes), preflight.HumanBytes(n.MemoryBytes))
	case free != nil && n.DiskBytes > free.DiskBytes:
		diskDir := ""
		if host.DiskDir != "" {
			diskDir = " on " + host.DiskDir
		}
		return fmt.Sprintf("disk: %s free%s, %s a lab", preflight.HumanBytes(had.DiskBytes), diskDir, preflight.HumanBytes(n.DiskBytes))
	}
	return "room for all of them"
}

// room is how many more labs needing n host takes: its cap less the
// class's labs there, and what its free memory and disk hold (MaxInt
// when nothing bounds it); 0 when it is down.
func room(host PlaceHost, free *preflight.Needs, count int, n preflight.Needs) int {
	if host.Down != nil {
		return 0
	}
	r := math.MaxInt
	if host.MaxLabs != nil {
		r = max(0, *host.MaxLabs-count)
	}
	if free != nil {
		if n.MemoryBytes > 0 {
			r = min(r, int(free.MemoryBytes/n.MemoryBytes))
		}
		if n.DiskBytes > 0 {
			r = min(r, int(free.DiskBytes/n.DiskBytes))
		}
	}
	return r
}

// better says whether spread prefers host a to host b for a lab needing
// n: the larger share of its room left (room now over the labs it holds
// of the class: those there before and the room it had),
// then fewer of the class's labs, then the one listed first (b, when the
// rest ties, as b is always listed before a).
func better(hosts []PlaceHost, free []*preflight.Needs, count, start []int, n preflight.Needs, a, b int) bool {
	ra, rb := room(hosts[a], free[a], count[a], n), room(hosts[b], free[b], count[b], n)
	sa, sb := share(ra, start[a]), share(rb, start[b])
	if sa != sb {
		return sa > sb
	}
	return count[a] < count[b]
}

// share is r over r0, 1 when nothing bounds the host.
func share(r, r0 int) float64 {
	if r0 <= 0 || r0 == math.MaxInt {
		return 1
	}
	return float64(r) / float64(r0)
}

// take removes n from free (when measured), never below zero.
func take(free *preflight.Needs, n preflight.Needs) {
	if free == nil {
		return
	}
	free.MemoryBytes -= min(free.MemoryBytes, n.MemoryBytes)
	free.DiskBytes -= min(free.DiskBytes, n.DiskBytes)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// PlacementTable is the plan's placement for people: a line per host with
// what was measured of it and the learners placed there. Empty for a
// class without hosts.
func (p *Plan) PlacementTable() string {
	if len(p.Hosts) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "class %s: %s on %s, placement %s\n", p.Class.Name, plural(len(p.Labs), "lab"), plural(len(p.Hosts), "host"), p.Placement)
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "HOST\tURI\tCPUS\tGUESTS\tMEMORY AVAILABLE\tDISK FREE\tLABS THERE\tCLASS LABS\tLEARNERS")
	for _, h := range p.Hosts {
		cpus, guests, mem, disk, there := "-", "-", "-", "-", "-"
		if c := h.Capacity; c != nil {
			cpus, guests, there = fmt.Sprint(c.CPUs), "tcg", fmt.Sprint(c.Labs)
			if c.KVM {
				guests = "kvm"
			}
			mem = fmt.Sprintf("%s of %s", preflight.HumanBytes(c.MemoryBytes), preflight.HumanBytes(c.MemoryTotalBytes))
			disk = preflight.HumanBytes(c.DiskBytes)
		}
		if h.Err != nil {
			guests = "unreachable"
		}
		learners := strings.Join(h.Labs, ",")
		if learners == "" {
			learners = "-"
		}
		class := fmt.Sprint(len(h.Labs))
		if h.MaxLabs != nil {
			class += fmt.Sprintf(" (max %d)", *h.MaxLabs)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Name, redactURI(h.URI), cpus, guests, mem, disk, there, class, learners)
	}
	_ = w.Flush()
	for _, h := range p.Hosts {
		if h.Err != nil {
			fmt.Fprintf(&b, "host %s is unreachable (%s): it takes no new lab, and its labs are not built until it answers\n", h.Name, oneLine(h.Err.Error()))
		}
	}
	return b.String()
}

// redactURI is uri without its query (a key file's path says nothing
// the reader needs, and a long one hides the table).
func redactURI(uri string) string {
	u, _, _ := strings.Cut(uri, "?")
	return u
}
