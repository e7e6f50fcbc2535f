package shims

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// digMain is a small dig: real A-record queries to the nameserver of
// /etc/resolv.conf (or @SERVER), printed as `dig +short` prints them, for
// the resolve_url checks of the stage scripts. Debian's dig would bring
// bind's libraries and ICU into the initrd; this one is the agent.
func digMain(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "dig (bootlab's small dig on the rehearsal bootstrap: A records, +short output)")
	server, short := "", false
	var names []string
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "@"):
			server = a[1:]
		case a == "+short":
			short = true
		case strings.HasPrefix(a, "+"), strings.HasPrefix(a, "-"), a == "A", a == "IN":
		default:
			names = append(names, a)
		}
	}
	if server == "" {
		data, _ := os.ReadFile("/etc/resolv.conf")
		for _, l := range strings.Split(string(data), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "nameserver" {
				server = f[1]
				break
			}
		}
	}
	if server == "" || len(names) == 0 {
		fmt.Fprintln(stderr, "usage: dig [@SERVER] NAME [+short] (and a nameserver in /etc/resolv.conf)")
		return 1
	}
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(server, "53"))
	}}
	for _, n := range names {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		addrs, err := r.LookupIP(ctx, "ip4", n)
		cancel()
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsTimeout {
			fmt.Fprintf(stdout, ";; connection timed out; no servers could be reached\n")
			return 9
		}
		for _, ip := range addrs {
			if short {
				fmt.Fprintln(stdout, ip)
			} else {
				fmt.Fprintf(stdout, "%s.\t0\tIN\tA\t%s\n", strings.TrimSuffix(n, "."), ip)
			}
		}
	}
	return 0
}
