package diagram

import (
	"bytes"
	"fmt"
	"strings"
)

// Topology is a lab as `bootlab lab graph` draws it.
type Topology struct {
	// Lab is the lab's name; Summary says its profile and node counts.
	Lab     string
	Summary string
	// Network is the libvirt network, Bridge the host bridge and Address
	// the host's address on it with the prefix (192.168.126.1/24): DHCP,
	// DNS and the load balancer answer there.
	Network string
	Mode    string
	Bridge  string
	Address string
	// Domain is the cluster domain every node's name is under; DNS are the
	// names the lab's dnsmasq answers besides the nodes'.
	Domain string
	DNS    []DNSName
	// Balancer is the haproxy address; Frontends its listeners.
	Balancer  string
	Frontends []Frontend
	Nodes     []Node
	// Live is true when node states were read from the hypervisor; Note
	// says where the picture came from (shown under it).
	Live bool
	Note string
}

// DNSName is one name and the address it resolves to.
type DNSName struct {
	Name    string
	Address string
}

// Frontend is one load balancer listener and the nodes it sends to.
type Frontend struct {
	Name    string
	Address string
	Port    int
	// Check says haproxy's health check of the backends ("check /readyz").
	Check    string
	Backends []string
}

// Node is one VM.
type Node struct {
	Name string
	// Role is bootstrap, master or worker.
	Role string
	IP   string
	MAC  string
	FQDN string
	// State is the domain's state when the picture is live ("running",
	// "shut off", "absent"); empty when drawn from the spec alone.
	State string
}

// tone is the node's colour by role.
func (n Node) tone() Tone {
	switch n.Role {
	case "bootstrap":
		return ToneBootstrap
	case "master":
		return ToneMasters
	case "worker":
		return ToneWorkers
	}
	return ToneNone
}

// label is the node's text lines: name, address, MAC, name in DNS.
func (n Node) label() []string {
	first := n.Name + " (" + n.Role + ")"
	if n.State != "" {
		first += ": " + n.State
	}
	return []string{first, n.IP, n.MAC, n.FQDN}
}

// listen is where a frontend listens: address:port.
func (f Frontend) listen() string { return fmt.Sprintf("%s:%d", f.Address, f.Port) }

// title is the picture's heading.
func (t *Topology) title() string {
	return "bootlab lab " + t.Lab + ": " + t.Summary
}

// bridgeLabel describes the host side of the lab network.
func (t *Topology) bridgeLabel() string {
	return fmt.Sprintf("host bridge %s %s (libvirt network %s, %s): DHCP, DNS and haproxy answer here", t.Bridge, t.Address, t.Network, t.Mode)
}

// dotLines escapes each line for a DOT string.
func dotLines(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = dotText(l)
	}
	return out
}

// dnsLines are the DNS names as "name -> address" lines.
func (t *Topology) dnsLines() []string {
	var out []string
	for _, d := range t.DNS {
		out = append(out, d.Name+" -> "+d.Address)
	}
	return append(out, "each node's name under "+t.Domain+" -> its address")
}

// Render draws the topology in format f.
func (t *Topology) Render(f Format) ([]byte, error) {
	switch f {
	case FormatSVG:
		return t.SVG(), nil
	case FormatDOT:
		return t.DOT(), nil
	case FormatMermaid:
		return t.Mermaid(), nil
	}
	return nil, fmt.Errorf("unknown picture format %q: use svg, dot or mermaid", f)
}

// DOT is the topology as a Graphviz digraph: `dot -Tpng` draws it.
func (t *Topology) DOT() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "digraph %q {\n", "bootlab-"+t.Lab)
	fmt.Fprintf(&b, "  graph [rankdir=TB, fontname=\"Helvetica\", labelloc=t, label=\"%s\"];\n", dotText(t.title()))
	b.WriteString("  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=11];\n")
	b.WriteString("  edge [fontname=\"Helvetica\", fontsize=10];\n")
	b.WriteString("  subgraph cluster_host {\n")
	fmt.Fprintf(&b, "    label=\"%s\";\n", dotText(t.bridgeLabel()))
	dns := strings.ReplaceAll(dotText("dnsmasq\n"+strings.Join(t.dnsLines(), "\n")), "\n", `\l`)
	fmt.Fprintf(&b, "    dns [shape=note, fillcolor=\"#f3f4f6\", label=\"%s\\l\"];\n", dns)
	b.WriteString("    subgraph cluster_lb {\n")
	fmt.Fprintf(&b, "      label=\"haproxy on %s\";\n", dotText(t.Balancer))
	for _, f := range t.Frontends {
		fmt.Fprintf(&b, "      %s [fillcolor=\"#ffffff\", label=\"%s\\n%s, %s\"];\n", id("fe_", f.Name), dotText(f.Name), dotText(f.listen()), dotText(f.Check))
	}
	b.WriteString("    }\n  }\n")
	for _, n := range t.Nodes {
		fill, _ := n.tone().colors()
		fmt.Fprintf(&b, "  %s [fillcolor=%q, label=\"%s\"];\n", id("n_", n.Name), fill, strings.Join(dotLines(n.label()), `\n`))
	}
	for _, f := range t.Frontends {
		for _, be := range f.Backends {
			fmt.Fprintf(&b, "  %s -> %s [label=\"%d\"];\n", id("fe_", f.Name), id("n_", be), f.Port)
		}
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// Mermaid is the topology as a Mermaid flowchart (GitHub renders it in
// Markdown).
func (t *Topology) Mermaid() []byte {
	var b bytes.Buffer
	b.WriteString("flowchart TB\n")
	fmt.Fprintf(&b, "  subgraph host[\"%s\"]\n", mermaidText(t.bridgeLabel()))
	fmt.Fprintf(&b, "    dns[\"%s\"]\n", mermaidText("dnsmasq<br/>"+strings.Join(t.dnsLines(), "<br/>")))
	fmt.Fprintf(&b, "    subgraph lb[\"haproxy on %s\"]\n", mermaidText(t.Balancer))
	for _, f := range t.Frontends {
		fmt.Fprintf(&b, "      %s[\"%s<br/>%s\"]\n", id("fe_", f.Name), mermaidText(f.Name), mermaidText(f.listen()))
	}
	b.WriteString("    end\n  end\n")
	for _, n := range t.Nodes {
		fmt.Fprintf(&b, "  %s[\"%s\"]\n", id("n_", n.Name), mermaidText(strings.Join(n.label(), "<br/>")))
	}
	for _, f := range t.Frontends {
		for _, be := range f.Backends {
			fmt.Fprintf(&b, "  %s --> %s\n", id("fe_", f.Name), id("n_", be))
		}
	}
	for _, n := range t.Nodes {
		fill, stroke := n.tone().colors()
		fmt.Fprintf(&b, "  style %s fill:%s,stroke:%s\n", id("n_", n.Name), fill, stroke)
	}
	return b.Bytes()
}
