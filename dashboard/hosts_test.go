package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/lab/class"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
)

// classFixture is two labs of class ws on hv, which its placement record
// puts on host rack1, and a lab of no class; hv's machine has the load
// files a host's kernel gives.
func classFixture(t *testing.T) (string, *fake.Hypervisor) {
	t.Helper()
	home := t.TempDir()
	hv := fake.New()
	for i, name := range []string{"ws-ann", "ws-ben", "solo"} {
		s := fixtureLab(t, home, hv, name, i+1)
		if name == "solo" {
			continue
		}
		st, err := labdir.LoadState(s.LabDir)
		require.NoError(t, err)
		st.Class = "ws"
		require.NoError(t, st.Save(s.LabDir))
	}
	dir := filepath.Join(home, "classes", "ws")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, class.PlacementFile),
		[]byte(`{"labs":{"ws-ann":{"host":"rack1","uri":"qemu:///fake"},"ws-ben":{"host":"rack1","uri":"qemu:///fake"}}}`), 0o644))
	hv.Machine.Files["/proc/meminfo"] = []byte("MemTotal:       16777216 kB\nMemFree:  1000 kB\nMemAvailable:    4194304 kB\n")
	hv.Machine.Files["/proc/stat"] = []byte("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 50 0 50 350 50 0 0 0 0 0\ncpu1 50 0 50 350 50 0 0 0 0 0\nintr 1\n")
	return home, hv
}

// Each lab names its class and host; the hosts are its labs' with their
// load: memory in use, and the CPUs busy between two readings.
func TestHostsGroupTheClassWithTheirLoad(t *testing.T) {
	home, hv := classFixture(t)
	c := &Collector{Home: home, Connect: connector(hv)}
	defer c.Close()
	ctx := context.Background()
	views, err := c.Snapshot(ctx)
	require.NoError(t, err)
	byName := map[string]LabView{}
	for _, v := range views {
		byName[v.Name] = v
	}
	assert.Equal(t, "ws", byName["ws-ann"].Class)
	assert.Equal(t, "rack1", byName["ws-ann"].Host, "the class's placement names the host")
	assert.Equal(t, "localhost", byName["solo"].Host, "a lab of no class: its URI's host")

	hosts, err := c.Hosts(ctx)
	require.NoError(t, err)
	require.Len(t, hosts, 1, "three labs, one daemon")
	h := hosts[0]
	assert.Equal(t, "qemu:///fake", h.URI)
	assert.Equal(t, 3, h.Labs)
	assert.Equal(t, 2, h.CPUs)
	assert.Equal(t, uint64(16)<<30, h.MemoryTotalBytes)
	assert.Equal(t, uint64(12200)<<20, h.MemoryUsedBytes, "12 GiB in use, to 100 MiB")
	assert.Zero(t, h.CPUBusyPercent, "one reading: no interval to measure yet")

	// 200 jiffies later, 150 of them busy.
	hv.Machine.Files["/proc/stat"] = []byte("cpu  200 0 150 750 100 0 0 0 0 0\n")
	c.hosts.read = nil
	hosts, err = c.Hosts(ctx)
	require.NoError(t, err)
	assert.Equal(t, 75.0, hosts[0].CPUBusyPercent)
}

// The server serves the hosts and pushes them to the class view.
func TestServerPushesHosts(t *testing.T) {
	home, hv := classFixture(t)
	ts := httptest.NewServer(New(Options{Source: &Collector{Home: home, Connect: connector(hv)}}).Handler())
	defer ts.Close()
	code, body := get(t, ts.URL+"/api/hosts")
	require.Equal(t, http.StatusOK, code, body)
	var doc struct {
		Hosts []HostView `json:"hosts"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &doc))
	require.Len(t, doc.Hosts, 1)
	assert.Equal(t, 3, doc.Hosts[0].Labs)
}

func TestHostLabel(t *testing.T) {
	t.Parallel()
	for uri, want := range map[string]string{
		"qemu:///system": "localhost",
		"qemu+ssh://root@rack2.example:2222/system?keyfile=/k": "rack2.example",
		"test:///default": "test:///default",
		"":                "",
	} {
		assert.Equal(t, want, hostLabel(uri), uri)
	}
}
