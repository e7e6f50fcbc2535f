package labdir

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// state.json keeps the host DNS record as the "<via>:<target>" string it
// always was; nothing set up is no key at all.
func TestHostDNSInTheState(t *testing.T) {
	cases := []struct {
		name string
		in   HostDNS
		json string
	}{
		{name: "resolved", in: HostDNS{Via: HostDNSResolved, Target: "bl-ux1"}, json: `{"hostDNS":"resolved:bl-ux1"}`},
		{name: "networkmanager", in: HostDNS{Via: HostDNSNetworkManager, Target: "/etc/NetworkManager/dnsmasq.d/bootlab-ux1.conf"},
			json: `{"hostDNS":"networkmanager:/etc/NetworkManager/dnsmasq.d/bootlab-ux1.conf"}`},
		{name: "none", in: HostDNS{}, json: `{}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(struct {
				HostDNS HostDNS `json:"hostDNS,omitzero"`
			}{tc.in})
			require.NoError(t, err)
			assert.JSONEq(t, tc.json, string(b))
			var st State
			require.NoError(t, json.Unmarshal([]byte(tc.json), &st))
			assert.Equal(t, tc.in, st.HostDNS)
		})
	}
	var st State
	assert.ErrorContains(t, json.Unmarshal([]byte(`{"hostDNS":"resolved"}`), &st), `host DNS record "resolved"`)
}
