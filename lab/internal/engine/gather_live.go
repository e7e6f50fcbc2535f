package engine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bootlab/bootlab/internal/wire"
	"github.com/bootlab/bootlab/lab/diagnose"
	"github.com/bootlab/bootlab/lab/internal/logbundle"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// LiveFile is where a live collection keeps what it tried (lab/diagnose's
// Live is its format): the connections from the nodes that must connect,
// the load balancer from the host, the lab's DNS. A bundle from lab gather
// has none: a bundle holds logs, not tries.
const LiveFile = "bootlab/live.json"

// liveTryTimeout bounds one connection try or DNS question: a port a
// filter drops answers nothing, and that is the answer. It is long enough
// for an emulated (TCG) node that starts a bash per try, all at once,
// and resolves a neighbour's address first: 3 s timed out there on a
// healthy lab.
const liveTryTimeout = 10 * time.Second

// CollectLive is what `lab diagnose` reads of a live probe or rehearsal
// lab: the same collection as a bundle of lab gather (the gatherer, over
// the lab's SSH path), held in memory in to instead of written, only the
// files wants accepts (lab/diagnose's Reads), plus LiveFile. Credentials
// are filtered out as for a bundle.
func CollectLive(ctx context.Context, s *spec.Spec, st *labdir.State, o GatherOptions, to logbundle.Holder, wants func(rel string) bool) error {
	if s.Profile == spec.ProfileOpenShift {
		return &InputError{Err: fmt.Errorf("lab %s is an OpenShift lab: lab diagnose walks a live probe or rehearsal lab only; run `bootlab lab gather -f <spec>` (openshift-install gather bootstrap) and `bootlab lab diagnose --bundle <the bundle it prints>`, or diagnose the bundle of your own openshift-install gather bootstrap", s.Name)}
	}
	if st.BootstrapRemoved {
		return fmt.Errorf("the bootstrap of lab %s was removed by `bootlab lab pivot`: the bootstrap's tree has nothing left to walk; `bootlab lab verify` checks the cluster", s.Name)
	}
	if o.Sources.Now == nil {
		o.Sources.Now = time.Now
	}
	m := logbundle.NewMemory(to, o.limits(), wants)
	g := newGatherer(m, s, st, o)
	g.live = &liveRecord{Connections: []diagnose.LiveConn{}, Untried: []diagnose.LiveUntried{}, DNS: []diagnose.LiveDNS{}, Reports: []diagnose.LiveReport{}}
	start := time.Now()
	if err := g.collect(ctx, o.Sources.Now()); err != nil {
		return err
	}
	g.o.Status.Infof("read the nodes, the API and the load balancer's state in %.1fs", time.Since(start).Seconds())
	began := time.Now()
	g.fromHostLive(ctx)
	g.o.Status.Infof("tried the load balancer and asked the lab's DNS from this machine in %.1fs", time.Since(began).Seconds())
	if _, err := m.AddJSON(LiveFile, g.live); err != nil {
		return err
	}
	return m.Commit()
}

// liveRecord is LiveFile, in the format lab/diagnose reads.
type liveRecord diagnose.Live

// liveChecks are an agent report's checks as live.json keeps them.
func liveChecks(cs []wire.Check) []diagnose.LiveCheck {
	out := make([]diagnose.LiveCheck, 0, len(cs))
	for _, c := range cs {
		out = append(out, diagnose.LiveCheck{Name: c.Name, OK: c.OK, Pending: c.Pending, Detail: c.Detail})
	}
	return out
}

// connTarget is a port a node must reach.
type connTarget struct {
	to   spec.Node
	port int
}

// mustReach are the connections node n makes during the bootstrap (the
// guide's table, docs/troubleshooting.md): the bootstrap to every master
// on 2379-2380 and 6443; a master to the bootstrap on 22623 and 2379-2380,
// and to every other master on 2379-2380 and 6443.
func mustReach(s *spec.Spec, n spec.Node) []connTarget {
	var out []connTarget
	for _, m := range s.NodesByRole(spec.RoleMaster) {
		if m.Name == n.Name {
			continue
		}
		for _, p := range []int{2379, 2380, 6443} {
			out = append(out, connTarget{m, p})
		}
	}
	if n.Role == spec.RoleMaster {
		for _, b := range s.NodesByRole(spec.RoleBootstrap) {
			for _, p := range []int{22623, 2379, 2380} {
				out = append(out, connTarget{b, p})
			}
		}
	}
	return out
}

// tryCommand is the command that tries one connection on a node: bash's
// /dev/tcp, bounded by timeout.
func tryCommand(addr string, port int) string {
	return fmt.Sprintf("timeout %d bash -c 'exec 3<>/dev/tcp/%s/%d'", int(liveTryTimeout/time.Second), addr, port)
}

// tryConnections tries every connection the node must make, all at once
// in one command on it, and records what answered each.
func (r *nodeRun) tryConnections(ctx context.Context) {
	ts := mustReach(r.g.s, r.n)
	if len(ts) == 0 {
		return
	}
	var script strings.Builder
	for _, t := range ts {
		// One line per try: address, port, exit status, the last part
		// of bash's message ("Connection refused").
		fmt.Fprintf(&script, "(m=$(%s 2>&1); echo \"%s %d $? ${m##*: }\") &\n", tryCommand(t.to.IP, t.port), t.to.IP, t.port)
	}
	script.WriteString("wait\n")
	ctx, cancel := context.WithTimeout(ctx, 2*liveTryTimeout)
	defer cancel()
	var out bytes.Buffer
	code, stderr, err := r.nd.Run(ctx, script.String(), &out)
	got := map[string][2]string{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 4)
		if len(f) >= 3 {
			msg := ""
			if len(f) == 4 {
				msg = f[3]
			}
			got[f[0]+":"+f[1]] = [2]string{f[2], msg}
		}
	}
	for _, t := range ts {
		c := diagnose.LiveConn{From: r.n.Name, To: t.to.Name, Address: t.to.IP, Port: t.port, Command: tryCommand(t.to.IP, t.port)}
		res, ok := got[net.JoinHostPort(t.to.IP, strconv.Itoa(t.port))]
		switch {
		case !ok && err != nil:
			c.Answer, c.Detail = "error", err.Error()
		case !ok:
			c.Answer, c.Detail = "error", fmt.Sprintf("the try printed nothing (exit status %d: %s)", code, firstLine(strings.TrimSpace(stderr)))
		default:
			c.Answer, c.Detail = tryAnswer(res[0], res[1])
		}
		r.g.live.add(c)
	}
}

// tryAnswer classifies a try's exit status and bash's message.
func tryAnswer(status, msg string) (answer, detail string) {
	msg = strings.TrimSpace(msg)
	switch lower := strings.ToLower(msg); {
	case status == "0":
		return "connected", "connected"
	case status == "124":
		return "timeout", fmt.Sprintf("no answer in %s", liveTryTimeout)
	case strings.Contains(lower, "connection refused"):
		return "refused", msg
	case strings.Contains(lower, "no route to host"), strings.Contains(lower, "network is unreachable"):
		return "unreachable", msg
	}
	return "error", fmt.Sprintf("exit status %s: %s", status, msg)
}

// add records c.
func (l *liveRecord) add(c diagnose.LiveConn) { l.Connections = append(l.Connections, c) }

// untried records that node n's connections could not be tried, and
// what its agent last reported of itself on its console.
func (g *gatherer) untried(ctx context.Context, n spec.Node, why string) {
	if len(mustReach(g.s, n)) > 0 {
		g.live.Untried = append(g.live.Untried, diagnose.LiveUntried{From: n.Name, Why: why})
	}
	if g.src.Console == nil {
		return
	}
	out := &tailBuffer{max: 4 << 20}
	if err := g.src.Console(ctx, n, out); err != nil {
		g.w.Note(LiveFile, fmt.Sprintf("%s's console log: %v", n.Name, err))
		return
	}
	rep, err := wire.ParseConsole(&out.buf)
	switch {
	case err != nil:
		g.w.Note(LiveFile, fmt.Sprintf("%s's console log: %v", n.Name, err))
	case rep == nil:
		g.w.Note(LiveFile, fmt.Sprintf("%s's console log holds no report of its agent yet", n.Name))
	default:
		g.live.Reports = append(g.live.Reports, diagnose.LiveReport{Node: n.Name, Seq: rep.Seq, Checks: liveChecks(rep.Checks)})
	}
}

// fromHostLive tries what the host tries: the load balancer's 6443 and
// 22623 (the guide's "outside -> load balancer"; the host is on the lab's
// network, so 22623 answering here says nothing of outside), and the
// lab's DNS, asked of its dnsmasq at the gateway.
func (g *gatherer) fromHostLive(ctx context.Context) {
	dial := g.src.DialHost
	if dial == nil {
		d := &net.Dialer{}
		dial = d.DialContext
	}
	for _, p := range []int{6443, 22623} {
		addr := net.JoinHostPort(g.s.Network.APIAddress, strconv.Itoa(p))
		c := diagnose.LiveConn{From: "host", To: "load balancer", Address: g.s.Network.APIAddress, Port: p,
			Command: fmt.Sprintf("a TCP connection from the host to %s (as `%s`)", addr, tryCommand(g.s.Network.APIAddress, p))}
		tctx, cancel := context.WithTimeout(ctx, liveTryTimeout)
		conn, err := dial(tctx, "tcp", addr)
		cancel()
		if err == nil {
			_ = conn.Close()
			c.Answer, c.Detail = "connected", "connected"
		} else {
			c.Answer, c.Detail = dialAnswer(err)
		}
		g.live.add(c)
	}
	g.dns(ctx, dial)
}

// dialAnswer classifies a failed dial from the host.
func dialAnswer(err error) (string, string) {
	msg := err.Error()
	var ne net.Error
	switch lower := strings.ToLower(msg); {
	case strings.Contains(lower, "refused"):
		return "refused", msg
	case strings.Contains(lower, "no route"), strings.Contains(lower, "unreachable"):
		return "unreachable", msg
	case strings.Contains(lower, "timeout"), strings.Contains(lower, "deadline"), errors.As(err, &ne) && ne.Timeout():
		return "timeout", fmt.Sprintf("no answer in %s", liveTryTimeout)
	}
	return "error", msg
}

// dns asks the lab's dnsmasq (at the gateway) what the nodes ask it: api
// and api-int (the load balancer), a name under *.apps (the ingress
// address), every node's name and the reverse of its address.
func (g *gatherer) dns(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error)) {
	s := g.s
	server := net.JoinHostPort(s.Network.Gateway, "53")
	g.live.DNSServer = server
	// Over TCP, which dnsmasq answers too: the same through a remote
	// hypervisor's SSH connection as on this machine.
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dial(ctx, "tcp", server)
	}}
	dom := s.Cluster.Domain()
	qs := []diagnose.LiveDNS{
		{Kind: "api", Name: "api." + dom, Want: s.Network.APIAddress},
		{Kind: "api-int", Name: "api-int." + dom, Want: s.Network.APIAddress},
		{Kind: "apps", Name: "bootlab-diagnose.apps." + dom, Want: s.Network.IngressAddress},
	}
	for _, n := range s.Nodes {
		qs = append(qs, diagnose.LiveDNS{Kind: "node", Name: s.FQDN(n), Want: n.IP})
	}
	for _, n := range s.Nodes {
		qs = append(qs, diagnose.LiveDNS{Kind: "reverse", Name: n.IP, Want: s.FQDN(n)})
	}
	var wg sync.WaitGroup
	for i := range qs {
		wg.Add(1)
		go func(q *diagnose.LiveDNS) {
			defer wg.Done()
			tctx, cancel := context.WithTimeout(ctx, liveTryTimeout)
			defer cancel()
			var err error
			if q.Kind == "reverse" {
				q.Command = fmt.Sprintf("dig @%s -x %s +short", s.Network.Gateway, q.Name)
				q.Answer, err = r.LookupAddr(tctx, q.Name)
				for j, a := range q.Answer {
					q.Answer[j] = strings.TrimSuffix(a, ".")
				}
			} else {
				q.Command = fmt.Sprintf("dig @%s %s +short", s.Network.Gateway, q.Name)
				q.Answer, err = r.LookupHost(tctx, q.Name)
			}
			if q.Answer == nil {
				q.Answer = []string{}
			}
			if err != nil {
				q.Error = err.Error()
			}
		}(&qs[i])
	}
	wg.Wait()
	g.live.DNS = qs
}
