package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/stages"
)

// Secret contents planted in every fixture lab: no response may carry them.
const (
	secretKey        = "SECRET-PRIVATE-KEY-b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"
	secretPull       = "SECRET-PULL-AUTH-dXNlcjpwYXNzd29yZA"
	secretKubeconfig = "SECRET-KUBECONFIG-CLIENT-KEY-LS0tLS1CRUdJTi"
	secretIgnition   = "SECRET-IGNITION-CONTENT-eyJpZ25pdGlvbiI6"
)

var secrets = []string{secretKey, secretPull, secretKubeconfig, secretIgnition}

// addLab defines the lab's network and running domains on hv, as `lab up`
// leaves them.
func addLab(hv *fake.Hypervisor, s *spec.Spec) {
	hv.NetworkObjects[s.NetworkName()] = &hypervisor.Object{Name: s.NetworkName(), Active: true, XML: fmt.Sprintf(
		`<network><name>%s</name><bridge name="virbr-%s"/><ip address="%s" prefix="24"/><dns><host ip="%s"><hostname>api.%s</hostname><hostname>api-int.%s</hostname></host></dns></network>`,
		s.NetworkName(), s.Name[:3], s.Network.Gateway, s.Network.APIAddress, s.Cluster.Domain(), s.Cluster.Domain())}
	for _, n := range s.Nodes {
		name := s.DomainName(n)
		hv.DomainObjects[name] = &hypervisor.Object{Name: name, Active: true, XML: fmt.Sprintf(
			`<domain type="qemu"><name>%s</name><metadata><bootlab:lab xmlns:bootlab="%s" name="%s" role="%s" node="%s"/></metadata></domain>`,
			name, lab.MetadataNamespace, s.Name, n.Role, n.Name)}
	}
}

// setActive powers a domain of hv on or off by hand, as virsh would.
func setActive(hv *fake.Hypervisor, domain string, active bool) {
	hv.DomainObjects[domain].Active = active
}

// connector hands out hv, the shared in-memory hypervisor.
func connector(hv *fake.Hypervisor) lab.Connector { return hypervisor.Shared(hv) }

// fixtureLab writes a lab directory under home as `lab up` and the stage
// commands leave it, with a private key, a pull secret, a kubeconfig and
// Ignition beside the state, and registers the lab with hv.
func fixtureLab(t testing.TB, home string, hv *fake.Hypervisor, name string, i int) *spec.Spec {
	t.Helper()
	dir := filepath.Join(home, "labs", name)
	write := func(rel, content string) string {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	pull := write("pull-secret.json", `{"auths":{"cloud.openshift.com":{"auth":"`+secretPull+`"}}}`)
	s := &spec.Spec{Name: name, Profile: spec.ProfileOpenShift, Libvirt: spec.Libvirt{URI: "qemu:///fake"},
		Topology: spec.Topology{Masters: 3, Workers: 2}, Network: spec.Network{CIDR: fmt.Sprintf("10.77.%d.0/24", i)}, LabDir: dir,
		OpenShift: spec.OpenShift{PullSecretFile: pull}}
	s.Defaults()
	labUUID := fixtureUUID(name)
	require.NoError(t, (&labdir.State{Name: name, UUID: labUUID, Spec: s, Accelerator: spec.AccelTCG}).Save(dir))
	write("ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\n"+secretKey+"\n-----END OPENSSH PRIVATE KEY-----\n")
	write("assets/auth/kubeconfig", "users:\n- user:\n    client-key-data: "+secretKubeconfig+"\n")
	write("assets/bootstrap.ign", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"contents":{"source":"data:,`+secretIgnition+`"}}]}}`)
	write("ignition/bootstrap.ign", `{"x":"`+secretIgnition+`"}`)
	write("verify.json", `{"labUUID":"`+labUUID+`","time":"2026-01-02T03:04:05Z","ok":false,"total":20,"passed":19,"failed":[{"group":"host","name":"dns api","detail":"no answer","fix":"check dnsmasq"}]}`)
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	var recs []string
	add := func(r stages.Record) {
		r.LabUUID = labUUID
		b, err := json.Marshal(r)
		require.NoError(t, err)
		recs = append(recs, string(b))
	}
	for n := 1; n <= 6; n++ {
		add(stages.Record{Timestamp: t0, Phase: stages.PhaseStart, Number: n})
		add(stages.Record{Timestamp: t0, Phase: stages.PhaseEnd, Number: n, Result: stages.ResultSuccess})
	}
	add(stages.Record{Timestamp: t0, Phase: stages.PhaseStart, Number: 7})
	// A failing stage whose output echoed the key and a kubeconfig line.
	add(stages.Record{Timestamp: t0, Phase: stages.PhaseEnd, Number: 7, Result: stages.ResultFailure,
		ErrorMessage: "etcd did not render: -----BEGIN OPENSSH PRIVATE KEY----- " + secretKey + " -----END OPENSSH PRIVATE KEY----- client-key-data: " + secretKubeconfig + ` {"auth":"` + secretPull + `"}` + "\nmore output " + secretIgnition})
	write("stages/records.jsonl", strings.Join(recs, "\n")+"\n")
	addLab(hv, s)
	return s
}

// fixtureUUID is the identity of fixture lab name.
func fixtureUUID(name string) string { return "fixture-lab-" + name }

// fixtureHome is a bootlab home with n labs.
func fixtureHome(t testing.TB, n int) (string, *fake.Hypervisor) {
	t.Helper()
	home := t.TempDir()
	hv := fake.New()
	for i := 0; i < n; i++ {
		fixtureLab(t, home, hv, fmt.Sprintf("ux%d", i+1), i+1)
	}
	return home, hv
}

// labView serves the labs of home through connect, as the dashboard does, and
// returns lab name's view (its JSON body too, for messages and checks of
// what it must not carry).
func labView(t *testing.T, home string, connect lab.Connector, name string) (LabView, string) {
	t.Helper()
	ts := httptest.NewServer(New(Options{Source: &Collector{Home: home, Connect: connect}}).Handler())
	defer ts.Close()
	code, body := get(t, ts.URL+"/api/labs/"+name)
	require.Equal(t, http.StatusOK, code, body)
	var v LabView
	require.NoError(t, json.Unmarshal([]byte(body), &v))
	return v, body
}
