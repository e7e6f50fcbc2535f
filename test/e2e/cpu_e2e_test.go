//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// x8664v2 are the CPUID features of x86-64-v2 that QEMU's qemu64 model
// lacks or has (QOM property names): RHEL 9's glibc, and so RHCOS's, stops
// every program on a CPU without all of them.
var x8664v2 = []string{"cx16", "lahf-lm", "popcnt", "sse4.1", "sse4.2", "ssse3"}

// A real (RHCOS) node of a lab on a host without KVM gets a virtual CPU
// RHCOS can run on: QEMU under TCG, asked for the CPU of the plan's
// openshift-tcg domains (the golden that TestPlanGoldens keeps equal to
// the code's), starts and gives the vCPU every x86-64-v2 feature. The same
// domain with libvirt's default CPU lacks them: that is what RHCOS got
// before, and it shows the check can fail.
func TestRHCOSCPUUnderTCG(t *testing.T) {
	parallel(t)
	golden, err := os.ReadFile(filepath.Join("..", "..", "testdata", "plan", "openshift-tcg", "domain-bootstrap.xml"))
	require.NoError(t, err)
	cpu := regexp.MustCompile(`(?s)<cpu .*?</cpu>`).Find(golden)
	require.NotNil(t, cpu, "the openshift-tcg plan's domain has no <cpu>")

	planned := vcpuFeatures(t, string(cpu))
	def := vcpuFeatures(t, "")
	for _, f := range x8664v2 {
		assert.True(t, planned[f], "the planned CPU lacks %s under TCG", f)
	}
	assert.False(t, planned["aes"], "the planned CPU offers AES-NI (Go's TLS would pick AES-GCM, slower emulated)")
	for _, f := range []string{"popcnt", "sse4.1", "sse4.2", "ssse3"} {
		assert.False(t, def[f], "libvirt's default CPU has %s: then it would not need one of its own", f)
	}
}

// vcpuFeatures starts a 32 MiB TCG domain with the given <cpu> element
// (none: libvirt's default) and no disk, and asks its QEMU which of the
// x86-64-v2 features (and aes) its vCPU has.
func vcpuFeatures(t *testing.T, cpu string) map[string]bool {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "e2e-cpu-" + hex.EncodeToString(b)
	xml := fmt.Sprintf(`<domain type="qemu"><name>%s</name><memory unit="MiB">32</memory><vcpu>1</vcpu>`+
		`<os><type arch="x86_64" machine="q35">hvm</type></os>%s<devices><memballoon model="none"/></devices></domain>`, name, cpu)
	f := filepath.Join(t.TempDir(), name+".xml")
	require.NoError(t, os.WriteFile(f, []byte(xml), 0o644))
	_, err := virsh(t, "define", f)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = virsh(t, "undefine", name) })
	_, err = virsh(t, "start", name)
	require.NoError(t, err, "QEMU under TCG refused the CPU:\n%s", cpu)
	t.Cleanup(func() { _, _ = virsh(t, "destroy", name) })

	mon, err := virsh(t, "qemu-monitor-command", name, `{"execute":"query-cpus-fast"}`)
	require.NoError(t, err, mon)
	var cpus struct {
		Return []struct {
			QOMPath string `json:"qom-path"`
		} `json:"return"`
	}
	require.NoError(t, json.Unmarshal([]byte(mon), &cpus), mon)
	require.Len(t, cpus.Return, 1, mon)
	has := map[string]bool{}
	for _, feature := range append(x8664v2, "aes") {
		q := fmt.Sprintf(`{"execute":"qom-get","arguments":{"path":%q,"property":%q}}`, cpus.Return[0].QOMPath, feature)
		out, err := virsh(t, "qemu-monitor-command", name, q)
		require.NoError(t, err, out)
		var v struct {
			Return bool `json:"return"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &v), out)
		has[feature] = v.Return
	}
	return has
}
