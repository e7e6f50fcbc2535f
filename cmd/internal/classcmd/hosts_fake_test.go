package classcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/class"
	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/hypervisor/fake"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// These tests play a class over two hosts, each its own fake daemon (the
// test driver: nothing runs), reached by URI; a host that is "down"
// refuses every connection, as a host whose sshd stopped does.

// fakeHosts is a connector over one fake per URI; a URI in down (or not
// known) fails to connect, and each connection is counted.
type fakeHosts struct {
	mu    sync.Mutex
	hvs   map[string]*fake.Hypervisor
	down  map[string]bool
	dials map[string]int
	// open are the connections open now, peak the most at once, by URI.
	open, peak map[string]int
}

func newFakeHosts(uris ...string) *fakeHosts {
	h := &fakeHosts{hvs: map[string]*fake.Hypervisor{}, down: map[string]bool{}, dials: map[string]int{}, open: map[string]int{}, peak: map[string]int{}}
	for _, u := range uris {
		h.hvs[u] = fakeTestDriver()
	}
	return h
}

func (h *fakeHosts) connect(ctx context.Context, uri string, log *slog.Logger) (hypervisor.Hypervisor, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dials[uri]++
	hv, ok := h.hvs[uri]
	if !ok || h.down[uri] {
		return nil, fmt.Errorf("connect to libvirt %s: dial tcp: connect: connection refused", uri)
	}
	shared, err := hypervisor.Shared(hv)(ctx, uri, log)
	if err != nil {
		return nil, err
	}
	h.open[uri]++
	h.peak[uri] = max(h.peak[uri], h.open[uri])
	return &counted{Hypervisor: shared, close: func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.open[uri]--
	}}, nil
}

// counted is a connection of fakeHosts: its Close is counted, once.
type counted struct {
	hypervisor.Hypervisor
	once  sync.Once
	close func()
}

func (c *counted) Close() error {
	c.once.Do(c.close)
	return nil
}

func (h *fakeHosts) setDown(uri string, down bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.down[uri] = down
}

// runHosts runs a class subcommand with every hypervisor reached through h.
func runHosts(t testing.TB, h *fakeHosts, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := &cmdutil.Factory{Streams: cmdutil.Streams{Out: &out, ErrOut: &errOut}, Status: status.New(&errOut, false), Log: slog.New(slog.DiscardHandler), Connect: h.connect}
	cmd := NewCmdClass(f)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

const (
	rack1 = "test:///rack1"
	rack2 = "test:///rack2"
)

// hostsClassFile is classFile's class of four learners over rack1 and rack2.
func hostsClassFile(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"vmlinuz", "initrd"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644))
	}
	doc := `name: it
template:
  profile: probe
  accelerator: tcg
  image: {kernel: ` + filepath.Join(dir, "vmlinuz") + `, initrd: ` + filepath.Join(dir, "initrd") + `}
  topology: {masters: 1, workers: 0}
learners: [ann, ben, cat, dan]
addressPool: 10.231.0.0/21
hosts:
  - {name: rack1, uri: "` + rack1 + `"}
  - {name: rack2, uri: "` + rack2 + `", hostDir: /srv/bootlab}
` + extra
	p := filepath.Join(dir, "class.yaml")
	require.NoError(t, os.WriteFile(p, []byte(doc), 0o644))
	return p
}

// labsOn are the bootlab networks on hv: one per lab there.
func labsOn(hv *fake.Hypervisor) []string {
	var out []string
	for n := range hv.NetworkObjects {
		if strings.HasPrefix(n, "bootlab-") {
			out = append(out, strings.TrimPrefix(n, "bootlab-"))
		}
	}
	return out
}

// A class over two hosts: config shows the placement before anything is
// made; up places the labs spread, each on its host with the host's URI
// and directory, and records where; again changes nothing; status names
// each lab's host; down removes every lab from both and spares a lab of
// another class on one of them.
func TestClassOverTwoHosts(t *testing.T) {
	home := t.TempDir()
	t.Setenv("BOOTLAB_HOME", home)
	t.Chdir(t.TempDir())
	hosts := newFakeHosts(rack1, rack2)
	// A lab of another class on rack2.
	other := &spec.Spec{Name: "oc-zed", Libvirt: spec.Libvirt{URI: rack2}, Network: spec.Network{CIDR: "10.231.2.0/24"}}
	other.Defaults()
	require.NoError(t, (&labdir.State{Name: other.Name, UUID: "u", Class: "oc", Spec: other}).Save(other.LabDir))
	_, err := hosts.hvs[rack2].DefineNetwork(context.Background(), `<network><name>bootlab-oc-zed</name><bridge name="bloczed"/><ip address="10.231.2.1" netmask="255.255.255.0"/></network>`)
	require.NoError(t, err)

	file := hostsClassFile(t, "")
	out, _, err := runHosts(t, hosts, "config", "-f", file)
	require.NoError(t, err)
	assert.Contains(t, out, "# class it: 4 labs on 2 hosts, placement spread\n")
	assert.Regexp(t, `# rack1 +test:///rack1 .* ann,cat\n`, out)
	assert.Regexp(t, `# rack2 +test:///rack2 .* ben,dan\n`, out)
	assert.Contains(t, out, "# class it, learner ben, host rack2\n")
	assert.Contains(t, out, "hostDir: /srv/bootlab/labs/it-ben")
	assert.NotContains(t, out, "10.231.2.0/24", "the other class's network is skipped")
	assert.Empty(t, labsOn(hosts.hvs[rack1]), "config makes nothing")

	js, _, err := runHosts(t, hosts, "config", "-f", file, "-o", "json")
	require.NoError(t, err)
	var doc ClassConfig
	require.NoError(t, json.Unmarshal([]byte(js), &doc))
	require.Len(t, doc.Hosts, 2)
	assert.Equal(t, []string{"ben", "dan"}, doc.Hosts[1].Learners)
	assert.Equal(t, "rack2", doc.Labs[1].Host)

	_, errOut, err := runHosts(t, hosts, "up", "-f", file, "--no-preflight", "--parallel", "1")
	require.NoError(t, err, errOut)
	assert.ElementsMatch(t, []string{"it-ann", "it-cat"}, labsOn(hosts.hvs[rack1]))
	assert.ElementsMatch(t, []string{"it-ben", "it-dan", "oc-zed"}, labsOn(hosts.hvs[rack2]))
	st, err := labdir.LoadState(filepath.Join(home, "labs", "it-ben"))
	require.NoError(t, err)
	assert.Equal(t, rack2, st.Spec.Libvirt.URI)
	assert.Equal(t, "/srv/bootlab/labs/it-ben", st.Spec.Libvirt.HostDir)
	record, err := class.ReadPlacement(class.Dir(home, "it"))
	require.NoError(t, err)
	assert.Equal(t, "rack2", record["it-ben"].Host)
	readme, err := os.ReadFile(filepath.Join(home, "classes", "it", "handouts", "ben", "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "Your lab runs on host rack2 of the class (libvirt `test:///rack2`)")

	// Again: nothing moves, nothing changes.
	_, errOut, err = runHosts(t, hosts, "up", "-f", file, "--no-preflight")
	require.NoError(t, err, errOut)
	assert.Contains(t, errOut, "nothing to change: lab it-ben already matches the spec")
	assert.ElementsMatch(t, []string{"it-ann", "it-cat"}, labsOn(hosts.hvs[rack1]))

	// A checkpoint of every lab, on both hosts.
	_, errOut, err = runHosts(t, hosts, "checkpoint", "save", "start", "--name", "it")
	require.NoError(t, err, errOut)
	assert.Contains(t, errOut, "✓ checkpoint save it-dan (learner dan)")
	for _, hv := range hosts.hvs {
		assert.NotEmpty(t, hv.DomainSnapshots, "every host's labs have their checkpoint")
	}
	_, errOut, err = runHosts(t, hosts, "checkpoint", "restore", "start", "--name", "it")
	require.NoError(t, err, errOut)

	out, _, err = runHosts(t, hosts, "status", "--name", "it")
	require.NoError(t, err)
	assert.Regexp(t, `LEARNER +LAB +HOST +NETWORK`, out)
	assert.Regexp(t, `ben +it-ben +rack2 +10\.231\.1\.0/24`, out)

	_, errOut, err = runHosts(t, hosts, "down", "--name", "it", "--yes")
	require.NoError(t, err, errOut)
	assert.Empty(t, labsOn(hosts.hvs[rack1]))
	assert.Equal(t, []string{"oc-zed"}, labsOn(hosts.hvs[rack2]), "the other class's lab is spared")
	assert.NoDirExists(t, class.Dir(home, "it"))
}

// A host lost during class up: the other host's labs are built, the
// failed learners named with the reason; up again, the host back,
// converges. A host lost after up: status shows its labs unreachable
// (asking it once), down cleans the other host and says what it could
// not reach, and down again once it answers finishes.
func TestClassHostLost(t *testing.T) {
	home := t.TempDir()
	t.Setenv("BOOTLAB_HOME", home)
	t.Chdir(t.TempDir())
	hosts := newFakeHosts(rack1, rack2)
	file := hostsClassFile(t, "")

	// rack2 fails while its labs are built (its first define fails).
	hosts.hvs[rack2].FailOn = "DefineNetwork bootlab-it-ben"
	_, errOut, err := runHosts(t, hosts, "up", "-f", file, "--no-preflight")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "class up failed for 1 of 4 labs:\n  it-ben (learner ben, host rack2): ")
	assert.Contains(t, errOut, "✓ up it-ann (learner ann)")
	assert.Contains(t, errOut, "✓ up it-dan (learner dan)")
	assert.ElementsMatch(t, []string{"it-ann", "it-cat"}, labsOn(hosts.hvs[rack1]))

	hosts.hvs[rack2].FailOn = ""
	_, errOut, err = runHosts(t, hosts, "up", "-f", file, "--no-preflight")
	require.NoError(t, err, errOut)
	assert.ElementsMatch(t, []string{"it-ben", "it-dan"}, labsOn(hosts.hvs[rack2]), "ben's lab is built where it was placed")

	// rack2 lost after up.
	hosts.setDown(rack2, true)
	before := hosts.dials[rack2]
	out, _, err := runHosts(t, hosts, "status", "--name", "it")
	require.NoError(t, err)
	assert.Regexp(t, `ben +it-ben +rack2 +10\.231\.1\.0/24 +unreachable +never verified \(unreachable: connect to libvirt test:///rack2: dial tcp: connect: connection refused\)`, out)
	assert.Regexp(t, `ann +it-ann +rack1 +10\.231\.0\.0/24 +2/2`, out)
	assert.Equal(t, 1, hosts.dials[rack2]-before, "a host that does not answer is asked once")

	_, errOut, err = runHosts(t, hosts, "down", "--name", "it", "--yes")
	require.Error(t, err)
	assert.Empty(t, labsOn(hosts.hvs[rack1]), "the host that answers is cleaned")
	assert.Contains(t, errOut, "warning: could not reach host rack2 (connect to libvirt test:///rack2: dial tcp: connect: connection refused): its labs it-ben, it-dan are left there, with their lab directories here, which find them; every other lab of the class is removed. Run `bootlab class down --name it` again once it answers")
	assert.DirExists(t, filepath.Join(home, "labs", "it-ben"))
	assert.DirExists(t, class.Dir(home, "it"), "the class's record stays with labs left")

	hosts.setDown(rack2, false)
	_, errOut, err = runHosts(t, hosts, "down", "--name", "it", "--yes")
	require.NoError(t, err, errOut)
	assert.Empty(t, labsOn(hosts.hvs[rack2]))
	assert.NoDirExists(t, class.Dir(home, "it"))
}

// A host that does not answer when class up begins takes no new lab: the
// class is placed on the others (config says so), and labs placed on it
// before are named failed, not moved.
func TestClassHostDownAtPlacement(t *testing.T) {
	home := t.TempDir()
	t.Setenv("BOOTLAB_HOME", home)
	t.Chdir(t.TempDir())
	hosts := newFakeHosts(rack1, rack2)
	file := hostsClassFile(t, "")
	hosts.setDown(rack2, true)
	out, _, err := runHosts(t, hosts, "config", "-f", file)
	require.NoError(t, err)
	assert.Regexp(t, `# rack1 .* ann,ben,cat,dan\n`, out)
	assert.Contains(t, out, "# host rack2 is unreachable (connect to libvirt test:///rack2: dial tcp: connect: connection refused): it takes no new lab, and its labs are not built until it answers\n")
	assert.Regexp(t, `# rack2 +test:///rack2 +- +unreachable `, out)

	// ben's lab was placed on rack2 by an earlier up, and cut short there.
	ben := &spec.Spec{Name: "it-ben"}
	ben.Defaults()
	require.NoError(t, (&labdir.State{Name: ben.Name, UUID: "u", Class: "it"}).Save(ben.LabDir))
	require.NoError(t, os.MkdirAll(class.Dir(home, "it"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(class.Dir(home, "it"), class.PlacementFile), []byte(`{"labs":{"it-ben":{"host":"rack2","uri":"`+rack2+`"}}}`), 0o644))
	_, _, err = runHosts(t, hosts, "up", "-f", file, "--no-preflight")
	require.Error(t, err)
	assert.Equal(t, "class up failed for 1 of 4 labs:\n  it-ben (learner ben, host rack2): host rack2 is unreachable: connect to libvirt test:///rack2: dial tcp: connect: connection refused (run class up again once it answers)", err.Error())
	assert.ElementsMatch(t, []string{"it-ann", "it-cat", "it-dan"}, labsOn(hosts.hvs[rack1]))
}

// Each boot file crosses the connection to a host once per class up: the
// first lab there to need it uploads it, the others copy that volume on
// the host (two labs at a time on each host here). A lab added to the
// class later copies from the labs already built.
func TestClassSendsEachBootFileOncePerHost(t *testing.T) {
	home := t.TempDir()
	t.Setenv("BOOTLAB_HOME", home)
	t.Chdir(t.TempDir())
	hosts := newFakeHosts(rack1, rack2)
	for _, hv := range hosts.hvs {
		hv.Caps = hypervisor.Capabilities{UploadsVolumes: true}
	}
	file := hostsClassFile(t, "")
	_, errOut, err := runHosts(t, hosts, "up", "-f", file, "--no-preflight", "--parallel", "2")
	require.NoError(t, err, errOut)
	for _, uri := range []string{rack1, rack2} {
		calls := hosts.hvs[uri].Mutations()
		for _, file := range []string{"boot-kernel-", "boot-initrd-"} {
			uploads, copies := 0, 0
			for _, c := range calls {
				if strings.HasPrefix(c, "UploadVolume ") && strings.Contains(c, "/"+file) {
					uploads++
				}
				if strings.HasPrefix(c, "CopyVolume ") && strings.Contains(c, "/"+file) {
					copies++
				}
			}
			assert.Equal(t, 1, uploads, "%s: %s sent once", uri, file)
			assert.Equal(t, 1, copies, "%s: %s copied for the host's other lab", uri, file)
		}
	}
	assert.Contains(t, errOut, "boot files on host rack1: ")
	assert.Contains(t, errOut, "copied there from another lab's instead of sent again")

	// A fifth learner, placed on rack1 (spread), copies what ann and cat
	// uploaded in the first up.
	hosts.hvs[rack1].Reset()
	doc, err := os.ReadFile(file)
	require.NoError(t, err)
	grown := strings.Replace(string(doc), "[ann, ben, cat, dan]", "[ann, ben, cat, dan, eve]", 1)
	require.NoError(t, os.WriteFile(file, []byte(grown), 0o644))
	_, errOut, err = runHosts(t, hosts, "up", "-f", file, "--no-preflight")
	require.NoError(t, err, errOut)
	calls := hosts.hvs[rack1].Mutations()
	assert.Equal(t, 0, countPrefixIn(calls, "UploadVolume bootlab-it-eve/boot-kernel-"), "eve's kernel is not sent: %v", calls)
	assert.Equal(t, 1, countPrefixIn(calls, "CopyVolume bootlab-it-eve/boot-kernel-"))
}

func countPrefixIn(calls []string, prefix string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}
