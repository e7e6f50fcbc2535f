package docs

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/testutil"
)

// What the pages say about the control plane's flags is generated from
// internal/controlplane, the code the renders, `stage validate` and the
// masters' installers use: each block between
// <!-- generated: NAME --> and <!-- end generated --> is what block NAME
// renders, so a change of a flag cannot leave a page behind.
// `go test ./docs -run TestControlPlaneBlocks -update` rewrites them.

// defaultRelease is the release the pages show the flags of: the lab's
// default (lab/spec), whose Kubernetes the tests and e2e run.
const defaultRelease = "4.19"

// rehearsalFeatureGate is the FeatureGate a rehearsal's stage 05 writes
// (internal/agent/standin renderAPI): the pages show what the pods make
// of it; test/e2e holds the rendered pods to the node's own FeatureGate.
var rehearsalFeatureGate = controlplane.FeatureGates{Enabled: []string{"GatewayAPI", "OpenShiftPodSecurityAdmission"},
	Disabled: []string{"DynamicResourceAllocation"}}

// blockRE finds a generated block: its name and what it holds.
var blockRE = regexp.MustCompile(`(?s)<!-- generated: ([a-z0-9-]+) -->\n(.*?)<!-- end generated -->`)

// blocks are the generated blocks by name.
func blocks() map[string]string {
	in := controlplane.Input{OpenShift: defaultRelease, FeatureGates: rehearsalFeatureGate}
	return map[string]string{
		"kube-apiserver-flags":                commandLine(controlplane.KubeAPIServer, in),
		"kube-apiserver-releases":             releasesTable(),
		"kube-apiserver-differences":          differencesTable(controlplane.KubeAPIServer),
		"openshift-only":                      openShiftOnlyTable(),
		"kube-controller-manager-flags":       commandLine(controlplane.KubeControllerManager, in),
		"kube-controller-manager-differences": differencesTable(controlplane.KubeControllerManager),
		"kube-scheduler-flags":                commandLine(controlplane.KubeScheduler, in),
		"kube-scheduler-differences":          differencesTable(controlplane.KubeScheduler),
		"leader-election":                     leaderElectionTable(),
		"controller-manager-handoff":          handoff(),
	}
}

// commandLine is the bootstrap pod's command, one flag a line, as the
// render writes it for the default release and the rehearsal's
// FeatureGate.
func commandLine(c controlplane.Component, in controlplane.Input) string {
	pod := controlplane.BootstrapPod(c, in, "")
	cmd := controlplane.CommandLine(pod.Pod.Spec.Containers[0])
	return "```\n" + strings.Join(cmd, " \\\n  ") + "\n```\n"
}

// releasesTable is what the kube-apiserver's flags change by release.
func releasesTable() string {
	var b strings.Builder
	b.WriteString("| OpenShift | Kubernetes | `--goaway-chance` | `--enable-admission-plugins` adds | `--feature-gates` (rehearsal's FeatureGate) |\n|---|---|---|---|---|\n")
	for _, r := range []string{"4.16", "4.17", "4.18", "4.19", "4.20", "4.21", "4.22"} {
		args := flagMap(controlplane.KubeAPIServerArgs(controlplane.Input{OpenShift: r, FeatureGates: rehearsalFeatureGate}))
		extra := "-"
		if strings.Contains(args["enable-admission-plugins"], "PersistentVolumeLabel") {
			extra = "PersistentVolumeLabel"
		}
		gates := args["feature-gates"]
		if gates == "" {
			gates = "none (1.35 locks DynamicResourceAllocation on)"
		}
		fmt.Fprintf(&b, "| %s | 1.%d | %s | %s | %s |\n", r, controlplane.KubernetesMinor(r), args["goaway-chance"], extra, gates)
	}
	return b.String()
}

func flagMap(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		out[k] = v
	}
	return out
}

func differencesTable(c controlplane.Component) string {
	var b strings.Builder
	b.WriteString("| Pods | Setting | OpenShift | The lab | Why |\n|---|---|---|---|---|\n")
	for _, d := range controlplane.Differences(c) {
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s |\n", d.Pods, d.Setting, cell(d.OpenShift), cell(d.Lab), cell(d.Why))
	}
	return b.String()
}

func openShiftOnlyTable() string {
	var b strings.Builder
	b.WriteString("| OpenShift's own | What it does on a real cluster |\n|---|---|\n")
	for _, o := range controlplane.OpenShiftOnly() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", o[0], cell(o[1]))
	}
	return b.String()
}

// cell keeps a table cell one cell: a pipe would end it.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func leaderElectionTable() string {
	kube := "Kubernetes' default"
	rows := [][]string{
		{"kube-controller-manager, bootstrap and masters", controlplane.KubernetesLeaseDuration + " (" + kube + ")",
			controlplane.ControllerManagerRenewDeadline, controlplane.ControllerManagerRetryPeriod, "kube-system/kube-controller-manager",
			"KCMO `defaultconfig.yaml`"},
		{"kube-scheduler, bootstrap", controlplane.KubernetesLeaseDuration, controlplane.KubernetesRenewDeadline,
			controlplane.KubernetesRetryPeriod, "kube-system/kube-scheduler", "KSO bootstrap `kube-scheduler-pod.yaml`: no `--config`, " + kube + "s"},
		{"kube-scheduler, masters", controlplane.SchedulerLeaseDuration, controlplane.SchedulerRenewDeadline, controlplane.SchedulerRetryPeriod,
			controlplane.SchedulerNamespace + "/kube-scheduler", "KSO `defaultconfig.yaml` (`KubeSchedulerConfiguration`)"},
	}
	var b strings.Builder
	b.WriteString("| Pod | Lease | Renew deadline | Retry | Lock | OpenShift's source |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// handoff is how long the masters' controller manager waits for the
// bootstrap's lease once the bootstrap's is gone.
func handoff() string {
	return fmt.Sprintf("The bootstrap's controller manager does not release its lease when it is torn down, so a master's takes it "+
		"once it runs out: at most the lease duration (%s) after its last renewal, asked every retry period (%s).\n",
		controlplane.KubernetesLeaseDuration, controlplane.ControllerManagerRetryPeriod)
}

// pagesWithBlocks are the pages that carry generated blocks.
var pagesWithBlocks = []string{"stages/08-kube-apiserver-bootstrap.md", "stages/09-kube-controller-manager-bootstrap.md",
	"stages/10-kube-scheduler-bootstrap.md", "stages/14-cvo-overrides.md", "rehearsal-lab.md"}

// Each generated block on the pages is what its code renders; every block
// is on a page.
func TestControlPlaneBlocks(t *testing.T) {
	t.Parallel()
	want := blocks()
	used := map[string]bool{}
	for _, page := range pagesWithBlocks {
		data, err := os.ReadFile(page)
		require.NoError(t, err)
		text := string(data)
		got := blockRE.ReplaceAllStringFunc(text, func(m string) string {
			name := blockRE.FindStringSubmatch(m)[1]
			used[name] = true
			b, ok := want[name]
			if !ok {
				t.Errorf("%s: no generated block %q", page, name)
				return m
			}
			return "<!-- generated: " + name + " -->\n" + b + "<!-- end generated -->"
		})
		if testutil.Updating() {
			require.NoError(t, os.WriteFile(page, []byte(got), 0o644))
			continue
		}
		assert.Equal(t, got, text, "%s: a generated block differs from internal/controlplane: go test ./docs -run TestControlPlaneBlocks -update", page)
	}
	for name := range want {
		assert.True(t, used[name], "block %s is on no page", name)
	}
}
