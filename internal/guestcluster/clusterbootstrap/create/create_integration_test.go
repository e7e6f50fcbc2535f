//go:build integration

package create_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap/create"
	"github.com/bootlab/bootlab/internal/guestcluster/clusterbootstrap/openshiftcrds"
	"github.com/bootlab/bootlab/internal/kube"
	"github.com/bootlab/bootlab/internal/testutil"
	"github.com/bootlab/bootlab/internal/testutil/kuberelease"
	"github.com/bootlab/bootlab/internal/testutil/kubetest"
)

func TestMain(m *testing.M) {
	os.Exit(kubetest.RunWithSharedCache(m))
}

// startAPI runs the default release's etcd and kube-apiserver on loopback,
// built (once) into the run's shared cache, and returns them with a
// client from their admin kubeconfig.
func startAPI(t *testing.T) (*kubetest.ControlPlane, *kube.Client) {
	t.Helper()
	rel := kuberelease.Build(t, "4.19")
	cp := kubetest.StartControlPlane(t, rel.Etcd, rel.Programs)
	cfg, err := kube.LoadKubeconfig(cp.Files["kubeconfig"])
	require.NoError(t, err)
	c, err := kube.NewClient(cfg)
	require.NoError(t, err)
	return cp, c
}

// bootstrapManifests is a directory like /opt/openshift/manifests: the
// installer's config objects (some with a status the create must write
// through the status subresource), namespaces and what lives in them,
// a CRD with its CR, and a CR whose CRD is not among them.
var bootstrapManifests = map[string]string{
	"cluster-config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-config-v1, namespace: kube-system}\ndata: {install-config: 'baseDomain: lab.example'}\n",
	"cluster-infrastructure-02-config.yml": `apiVersion: config.openshift.io/v1
kind: Infrastructure
metadata: {name: cluster}
spec: {cloudConfig: {name: ""}, platformSpec: {type: None}}
status: {apiServerURL: "https://api.lab.example:6443", apiServerInternalURI: "https://api-int.lab.example:6443", platform: None, infrastructureName: lab-x}
`,
	"cluster-network-02-config.yml":                 "apiVersion: config.openshift.io/v1\nkind: Network\nmetadata: {name: cluster}\nspec: {clusterNetwork: [{cidr: 10.128.0.0/14, hostPrefix: 23}], networkType: OVNKubernetes, serviceNetwork: [172.30.0.0/16]}\n",
	"cluster-dns-02-config.yml":                     "apiVersion: config.openshift.io/v1\nkind: DNS\nmetadata: {name: cluster}\nspec: {baseDomain: lab.example}\n",
	"cvo-overrides.yaml":                            "apiVersion: config.openshift.io/v1\nkind: ClusterVersion\nmetadata: {name: version, namespace: openshift-cluster-version}\nspec: {clusterID: rehearsal, overrides: []}\n",
	"99_feature-gate.yaml":                          "apiVersion: config.openshift.io/v1\nkind: FeatureGate\nmetadata: {name: cluster}\nspec: {}\nstatus: {featureGates: [{version: 4.19.0, enabled: [{name: GatewayAPI}], disabled: []}]}\n",
	"99_openshift-machineconfig_99-master-ssh.yaml": "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata: {name: 99-master-ssh, labels: {machineconfiguration.openshift.io/role: master}}\nspec: {config: {ignition: {version: 3.2.0}}}\n",
	"openshift-config-secret-pull-secret.yaml":      "apiVersion: v1\nkind: Secret\nmetadata: {name: pull-secret, namespace: openshift-config}\ntype: kubernetes.io/dockerconfigjson\ndata: {.dockerconfigjson: eyJhdXRocyI6e319}\n",
	"00_openshift-config-namespaces.yaml":           "apiVersion: v1\nkind: Namespace\nmetadata: {name: openshift-config}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: openshift-etcd}\n",
	"openshift-etcd-svc.json":                       `{"apiVersion":"v1","kind":"Service","metadata":{"name":"etcd","namespace":"openshift-etcd"},"spec":{"clusterIP":"None","ports":[{"name":"etcd","port":2379}]}}`,
	"0000_50_widgets.crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.test.bootlab.dev}
spec:
  group: test.bootlab.dev
  scope: Namespaced
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
`,
	"00_a-widget.yaml": "apiVersion: test.bootlab.dev/v1\nkind: Widget\nmetadata: {name: a, namespace: openshift-etcd}\nsize: 3\n",
	"00_a-gadget.yaml": "apiVersion: late.bootlab.dev/v1\nkind: Gadget\nmetadata: {name: g}\n",
}

const gadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.late.bootlab.dev}
spec:
  group: late.bootlab.dev
  scope: Cluster
  names: {kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
`

func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	return dir
}

// The bootstrap's create, for real: bootlab's OpenShift CRDs first, then a
// manifests directory through the release's kube-apiserver. Every object
// is read back by kubectl; statuses the create drops are written; a CR
// whose CRD is created later (by "another component", here the test) is
// retried until its kind is served; a second run skips everything.
func TestCreateThroughARealAPI(t *testing.T) {
	t.Parallel()
	cp, c := startAPI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	crds, err := openshiftcrds.Manifests()
	require.NoError(t, err)
	var crdLog testutil.SyncBuffer
	res, err := create.Create(ctx, c, crds, create.Options{Log: &crdLog})
	require.NoError(t, err, crdLog.String())
	assert.Equal(t, len(crds), res.Count(create.Created))
	assert.Contains(t, crdLog.String(), `Created "bootlab-crds/0000_10_config-operator_01_infrastructures-Default.crd.yaml" customresourcedefinitions.v1.apiextensions.k8s.io/infrastructures.config.openshift.io -n `+"\n")

	dir := writeDir(t, bootstrapManifests)
	ms, err := create.Load(dir)
	require.NoError(t, err)
	require.Len(t, ms, 14)
	var log testutil.SyncBuffer
	done := make(chan struct{})
	var createErr error // the goroutine's own: err is the test's, written below while it runs
	go func() {
		defer close(done)
		res, createErr = create.Create(ctx, c, ms, create.Options{Log: &log})
	}()
	// The Gadget waits for a CRD nobody in the directory creates.
	waitLog(t, &log, `"00_a-gadget.yaml": the API does not serve late.bootlab.dev/v1 (kind Gadget) yet: no CRD among the manifests defines it`)
	_, err = create.Create(ctx, c, parse(t, "gadget.crd.yaml", gadgetCRD), create.Options{})
	require.NoError(t, err)
	<-done
	require.NoError(t, createErr, log.String())
	t.Logf("create log:\n%s%s", log.String(), res.Summary())

	assert.Equal(t, 14, res.Count(create.Created), res.Summary())
	assert.GreaterOrEqual(t, res.Rounds, 2, "the Gadget was retried")
	assert.Contains(t, res.Summary(), "14 manifests: created 14, skipped 0 (already there), failed 0")
	assert.Contains(t, log.String(), `Created "openshift-config-secret-pull-secret.yaml" secrets.v1./pull-secret -n openshift-config`)
	assert.Contains(t, log.String(), `Updated status for "cluster-infrastructure-02-config.yml"`)
	assert.NotContains(t, log.String(), `Updated status for "cluster-network-02-config.yml"`, "Network has no status subresource")
	assert.Less(t, strings.Index(log.String(), `Created "00_openshift-config-namespaces.yaml#1"`), strings.Index(log.String(), `Created "cluster-config.yaml"`),
		"namespaces before what lives in them")

	// kubectl reads back every object of the directory.
	out, err := cp.Kubectl("get", "-f", dir, "-o", "name")
	require.NoError(t, err, out)
	names := strings.Fields(out)
	sort.Strings(names)
	assert.Equal(t, []string{
		"clusterversion.config.openshift.io/version", "configmap/cluster-config-v1", "customresourcedefinition.apiextensions.k8s.io/widgets.test.bootlab.dev",
		"dns.config.openshift.io/cluster", "featuregate.config.openshift.io/cluster", "gadget.late.bootlab.dev/g",
		"infrastructure.config.openshift.io/cluster", "machineconfig.machineconfiguration.openshift.io/99-master-ssh",
		"namespace/openshift-config", "namespace/openshift-etcd", "network.config.openshift.io/cluster",
		"secret/pull-secret", "service/etcd", "widget.test.bootlab.dev/a",
	}, names)
	for _, q := range []struct{ args, want string }{
		{"get infrastructure cluster -o jsonpath={.status.apiServerInternalURI}", "https://api-int.lab.example:6443"},
		{"get featuregate cluster -o jsonpath={.status.featureGates[0].enabled[0].name}", "GatewayAPI"},
		{"get network cluster -o jsonpath={.spec.clusterNetwork[0].hostPrefix}", "23"},
		{"get widget a -n openshift-etcd -o jsonpath={.size}", "3"},
		{"get clusterversion version -o jsonpath={.spec.clusterID}", "rehearsal"},
	} {
		out, err := cp.Kubectl(strings.Fields(q.args)...)
		require.NoError(t, err, out)
		assert.Equal(t, q.want, out, q.args)
	}

	again, err := create.Create(ctx, c, ms, create.Options{})
	require.NoError(t, err)
	assert.Equal(t, 14, again.Count(create.Existed), "a second run finds everything there")
	assert.Equal(t, 1, again.Rounds)
}

func parse(t *testing.T, name, data string) []create.Manifest {
	t.Helper()
	ms, err := create.Parse(name, []byte(data))
	require.NoError(t, err)
	return ms
}

func waitLog(t *testing.T, log *testutil.SyncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(log.String(), want) {
		if time.Now().After(deadline) {
			require.Fail(t, "not in the create's log", "%q\nlog:\n%s", want, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Broken manifests are named: a file that is not a manifest stops the
// load before anything is created; an object the API refuses as invalid
// is retried until the deadline, as library-go's EnsureManifestsCreated
// retries every error, and is then named with the API's reason, while the
// rest of the directory is created.
func TestBrokenManifestsAreNamed(t *testing.T) {
	t.Parallel()
	cp, c := startAPI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	dir := writeDir(t, map[string]string{
		"good.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good, namespace: default}\n",
		"broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [\n",
	})
	_, err := create.Load(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"broken.yaml": document 1: not YAML or JSON`)
	out, err := cp.Kubectl("get", "configmap", "good", "-n", "default")
	assert.Error(t, err, "nothing was created: %s", out)
	assert.Contains(t, out, "NotFound")

	dir = writeDir(t, map[string]string{
		"good.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good, namespace: default}\n",
		"invalid.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_A_Name, namespace: default}\n",
		"nons.yaml":    "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n",
	})
	ms, err := create.Load(dir)
	require.NoError(t, err)
	short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
	defer cancelShort()
	res, err := create.Create(short, c, ms, create.Options{})
	var inc *create.IncompleteError
	require.ErrorAs(t, err, &inc)
	assert.ErrorIs(t, inc.Cause, context.DeadlineExceeded, "refusals are retried until the deadline")
	assert.Greater(t, res.Rounds, 2, "retried every 200 ms")
	assert.Len(t, inc.Failed, 2)
	msg := err.Error()
	assert.Contains(t, msg, `"invalid.yaml": refused: POST /api/v1/namespaces/default/configmaps: 422 Invalid`)
	assert.Contains(t, msg, `"nons.yaml": refused: Secret is namespaced and the manifest has no metadata.namespace: set it`)
	assert.Equal(t, 1, res.Count(create.Created))
	assert.Contains(t, res.Summary(), "3 manifests: created 1, skipped 0 (already there), failed 2")
	out, err = cp.Kubectl("get", "configmap", "good", "-n", "default", "-o", "name")
	require.NoError(t, err, out)
	assert.Equal(t, "configmap/good\n", out)
}

// Bootstrap, as stage 13 runs it: bootlab's CRDs among the directory's
// files in one lexical order, no kind first (library-go's
// EnsureManifestsCreated): a custom resource whose file sorts before its
// CRD fails its first round and is created once discovery, asked again,
// serves its kind.
func TestBootstrapCreatesInLexicalOrderAndRediscovers(t *testing.T) {
	t.Parallel()
	cp, _ := startAPI(t)
	crds, err := openshiftcrds.Manifests()
	require.NoError(t, err)
	dir := writeDir(t, map[string]string{
		"000-etcd-operator.yaml":    "apiVersion: operator.openshift.io/v1\nkind: Etcd\nmetadata: {name: cluster}\nspec: {managementState: Managed}\n",
		"cluster-dns-02-config.yml": "apiVersion: config.openshift.io/v1\nkind: DNS\nmetadata: {name: cluster}\nspec: {baseDomain: lab.example}\n",
	})
	var log testutil.SyncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := create.Bootstrap(ctx, create.BootstrapOptions{Kubeconfig: cp.Files["kubeconfig"], ManifestDir: dir, Extra: crds, Log: &log})
	require.NoError(t, err, log.String())
	assert.Equal(t, len(crds)+2, res.Count(create.Created))
	assert.Greater(t, res.Rounds, 1, "the Etcd sorts before its CRD: a second round creates it")
	assert.Equal(t, "000-etcd-operator.yaml", res.Objects[0].Path, "lexical order, no CRD first")
	text := log.String()
	at := 0
	for _, want := range []string{
		"Creating self-hosted assets from " + dir,
		`Created "bootlab-crds/0000_12_etcd_01_etcds.crd.yaml"`,
		`[#1] failed to create some manifests:` + "\n" + `"000-etcd-operator.yaml": the API does not serve operator.openshift.io/v1`,
		`Created "000-etcd-operator.yaml" etcds.v1.operator.openshift.io/cluster -n` + " \n",
		fmt.Sprintf("%d manifests: created %d, skipped 0 (already there), failed 0", len(crds)+2, len(crds)+2),
	} {
		i := strings.Index(text[at:], want)
		require.GreaterOrEqual(t, i, 0, "%q after byte %d of:\n%s", want, at, text)
		at += i + len(want)
	}
	out, err := cp.Kubectl("get", "etcd", "cluster", "-o", "jsonpath={.spec.managementState}")
	require.NoError(t, err, out)
	assert.Equal(t, "Managed", out)
}
