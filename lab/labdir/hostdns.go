package labdir

import (
	"fmt"
	"strings"
)

// HostDNSVia is the resolver the host was told to send a lab's cluster
// domain to the lab through.
type HostDNSVia string

const (
	// HostDNSResolved: systemd-resolved, per link (Target is the bridge).
	HostDNSResolved HostDNSVia = "resolved"
	// HostDNSNetworkManager: a NetworkManager dnsmasq drop-in (Target is
	// the file).
	HostDNSNetworkManager HostDNSVia = "networkmanager"
)

// HostDNS is how the host was told to resolve a lab's cluster domain, so
// that `down` undoes exactly that. state.json keeps it as "<via>:<target>"
// ("resolved:<link>", "networkmanager:<file>"); the zero HostDNS means
// nothing was set up.
type HostDNS struct {
	Via    HostDNSVia
	Target string
}

// IsZero is true when nothing was set up.
func (h HostDNS) IsZero() bool { return h == HostDNS{} }

// String is the record as state.json keeps it.
func (h HostDNS) String() string {
	if h.IsZero() {
		return ""
	}
	return string(h.Via) + ":" + h.Target
}

// MarshalText writes String.
func (h HostDNS) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText reads "<via>:<target>". A resolver this bootlab does not
// know is kept as read (undoing it then fails, naming it), so the rest of
// the state still loads.
func (h *HostDNS) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*h = HostDNS{}
		return nil
	}
	via, target, ok := strings.Cut(string(b), ":")
	if !ok || via == "" || target == "" {
		return fmt.Errorf("host DNS record %q: want <resolver>:<link or file>", b)
	}
	*h = HostDNS{Via: HostDNSVia(via), Target: target}
	return nil
}
