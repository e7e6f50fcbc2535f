package labcmd

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab"
	"github.com/bootlab/bootlab/lab/cluster"
	"github.com/bootlab/bootlab/lab/labdir"
)

const openshiftTestdata = "../../../testdata/openshift"

func TestWaitFlags(t *testing.T) {
	var got *WaitOptions
	cmd := NewCmdWait(testFactory(), func(o *WaitOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"bootstrap-complete", "--api-timeout", "30m", "--no-ssh", "--no-start-workers"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, EventBootstrapComplete, got.Event)
	assert.Equal(t, "30m0s", got.APITimeout.String())
	assert.Equal(t, "45m0s", got.BootstrapTimeout.String(), "the installer's default")
	assert.Equal(t, "40m0s", got.InstallTimeout.String())
	assert.True(t, got.NoSSH)
	assert.True(t, got.NoStartWorkers)

	cmd = NewCmdWait(testFactory(), func(o *WaitOptions) error { t.Fatal("must not run"); return nil })
	cmd.SetArgs([]string{"cluster-ready"})
	err := cmd.Execute()
	require.Error(t, err)
	var ce *cmdutil.CodeError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, cmdutil.ExitUsage, ce.Code)
}

func TestApproveCSRsFlags(t *testing.T) {
	var got *ApproveCSRsOptions
	cmd := NewCmdApproveCSRs(testFactory(), func(o *ApproveCSRsOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--watch", "--dry-run", "-o", "json"})
	require.NoError(t, cmd.Execute())
	assert.True(t, got.Watch)
	assert.True(t, got.DryRun)
	assert.Equal(t, "json", got.Output)
}

func csrObject(t *testing.T, name, signer, user, cn string, usages []certv1.KeyUsage) certv1.CertificateSigningRequest {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}}}, k)
	require.NoError(t, err)
	return certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Now()},
		Spec: certv1.CertificateSigningRequestSpec{
			Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), SignerName: signer, Username: user, Usages: usages,
		},
	}
}

func TestApproveCSRsTableAndExplanations(t *testing.T) {
	list := certv1.CertificateSigningRequestList{Items: []certv1.CertificateSigningRequest{
		csrObject(t, "csr-w0", cluster.SignerKubeletClient, cluster.NodeBootstrapper, "system:node:worker-0", []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageClientAuth}),
		csrObject(t, "csr-x", cluster.SignerKubeletClient, cluster.NodeBootstrapper, "system:node:stranger", []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageClientAuth}),
	}}
	var mu sync.Mutex
	var puts []string
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			mu.Lock()
			puts = append(puts, r.URL.Path)
			mu.Unlock()
			io.Copy(w, r.Body)
			return
		}
		require.Equal(t, cluster.CSRPath, r.URL.Path)
		json.NewEncoder(w).Encode(list)
	}))
	defer ts.Close()
	api := &cluster.Client{Server: ts.URL, HTTP: ts.Client()}
	var out, errOut bytes.Buffer
	f := &cmdutil.Factory{Streams: cmdutil.Streams{Out: &out, ErrOut: &errOut}, Status: status.New(&errOut, false)}
	nodes := []cluster.LabNode{{Name: "worker-0", FQDN: "worker-0.ocp.lab.local", IP: "192.168.126.20"}}
	require.NoError(t, approveCSRs(context.Background(), f, &ApproveCSRsOptions{Output: "table"}, clusterCSRs{api, nodes}))

	assert.Equal(t, []string{cluster.CSRPath + "/csr-w0/approval"}, puts, "only this lab's node is approved")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3)
	assert.Regexp(t, `^NAME\s+AGE\s+KIND\s+SIGNER\s+REQUESTOR\s+NODE\s+ACTION$`, lines[0])
	assert.Regexp(t, `^csr-w0\s+\d+s\s+kubelet client\s+kubernetes.io/kube-apiserver-client-kubelet\s+system:serviceaccount:openshift-machine-config-operator:node-bootstrapper\s+worker-0\s+approved$`, lines[1])
	assert.Regexp(t, `^csr-x\s+.*\s+-\s+refused$`, lines[2])
	assert.Contains(t, errOut.String(), "csr-x: kubelet client (a new node asking")
	assert.Contains(t, errOut.String(), `refused: "stranger" is not a node of this lab`)
}

// fakeLab is an openshift-profile spec wired to the openshift-install test
// double and a file:// mirror holding a small "RHCOS" image.
func fakeLab(t *testing.T) (*spec.Spec, string) {
	t.Helper()
	dir := t.TempDir()
	inst, _ := filepath.Abs(filepath.Join(openshiftTestdata, "fake-openshift-install"))
	oc, _ := filepath.Abs(filepath.Join(openshiftTestdata, "fake-oc"))
	ps := filepath.Join(dir, "pull-secret.json")
	require.NoError(t, os.WriteFile(ps, []byte(`{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz"}}}`), 0o600))

	raw := append([]byte("QFI\xfb"), bytes.Repeat([]byte("rhcos"), 1000)...)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw)
	zw.Close()
	mirror := filepath.Join(dir, "mirror")
	imgPath := filepath.Join(mirror, "art/storage/prod/streams/rhel-9.6/builds/9.6.20250402-0/x86_64/rhcos-9.6.20250402-0-qemu.x86_64.qcow2.gz")
	require.NoError(t, os.MkdirAll(filepath.Dir(imgPath), 0o755))
	require.NoError(t, os.WriteFile(imgPath, gz.Bytes(), 0o644))
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	stream, err := os.ReadFile(filepath.Join(openshiftTestdata, "stream.json"))
	require.NoError(t, err)
	st := strings.ReplaceAll(strings.ReplaceAll(string(stream), "@SHA256@", sum(gz.Bytes())), "@UNCOMPRESSED_SHA256@", sum(raw))
	streamPath := filepath.Join(dir, "stream.json")
	require.NoError(t, os.WriteFile(streamPath, []byte(st), 0o644))
	t.Setenv("FAKE_STREAM_JSON", streamPath)
	t.Setenv("BOOTLAB_CACHE", filepath.Join(dir, "cache"))

	s := &spec.Spec{Name: "ocpfake", LabDir: filepath.Join(dir, "lab")}
	s.OpenShift.PullSecretFile = ps
	s.OpenShift.InstallerPath = inst
	s.OpenShift.OCPath = oc
	s.OpenShift.Mirrors.RHCOS = "file://" + mirror
	s.Defaults()
	return s, dir
}

func TestPrepareOpenShift(t *testing.T) {
	s, dir := fakeLab(t)
	require.NoError(t, lab.EnsureSSHKey(s))
	var errOut bytes.Buffer
	f := &cmdutil.Factory{Streams: cmdutil.Streams{Out: &bytes.Buffer{}, ErrOut: &errOut}, Status: status.New(&errOut, false)}
	s.OpenShift.ManualBootstrap = true
	built, err := lab.Prepare(context.Background(), s, cmdutil.PrepareOptions(f))
	require.NoError(t, err, errOut.String())
	assert.True(t, built.OpenShift.ManualBootstrap)
	assert.Equal(t, filepath.Join(dir, "cache", "rhcos", "rhcos-9.6.20250402-0-qemu.x86_64.qcow2"), built.Image.Path, "the built spec boots the cached qcow2")
	assert.Empty(t, s.Image.Path, "the spec given is left as it was")
	for _, n := range s.Nodes {
		fi, err := os.Stat(labdir.Ignition(s, n))
		require.NoError(t, err, n.Name)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	}
	boot, err := os.ReadFile(labdir.Ignition(s, s.NodesByRole(spec.RoleBootstrap)[0]))
	require.NoError(t, err)
	manual, err := ignition.IsManualBootstrap(boot)
	require.NoError(t, err)
	assert.True(t, manual)
	assert.Contains(t, errOut.String(), "openshift-install create ignition-configs")

	// A malformed pull secret: exit code 3 through `up`'s wrapping.
	require.NoError(t, os.WriteFile(s.OpenShift.PullSecretFile, []byte(`{"auths":{}}`), 0o600))
	_, err = lab.Prepare(context.Background(), s, cmdutil.PrepareOptions(f))
	assert.Equal(t, cmdutil.ExitInvalid, cmdutil.ExitCodeOf(err))
}

func TestGatherCommand(t *testing.T) {
	s, dir := fakeLab(t)
	data, err := s.Marshal()
	require.NoError(t, err)
	specFile := filepath.Join(dir, "bootlab.yaml")
	require.NoError(t, os.WriteFile(specFile, data, 0o644))
	calls := filepath.Join(dir, "calls")
	t.Setenv("FAKE_INSTALLER_LOG", calls)
	var out, errOut bytes.Buffer
	f := &cmdutil.Factory{Streams: cmdutil.Streams{Out: &out, ErrOut: &errOut}, Status: status.New(&errOut, false)}
	cmd := NewCmdGather(f, nil)
	cmd.SetArgs([]string{"-f", specFile})
	cmd.SilenceUsage = true
	err = cmd.Execute()
	assert.ErrorIs(t, err, labdir.ErrNoState, "a lab never brought up is refused as such")
	assert.ErrorContains(t, err, "bootlab lab up")

	require.NoError(t, (&labdir.State{Name: s.Name, Spec: s}).Save(s.LabDir))
	cmd = NewCmdGather(f, nil)
	cmd.SetArgs([]string{"-f", specFile})
	assert.ErrorContains(t, cmd.Execute(), "no install assets")

	require.NoError(t, os.MkdirAll(labdir.Assets(s), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(labdir.Assets(s), "metadata.json"), []byte("{}"), 0o600))
	cmd = NewCmdGather(f, nil)
	cmd.SetArgs([]string{"-f", specFile})
	require.NoError(t, cmd.Execute(), errOut.String())
	assert.Equal(t, filepath.Join(labdir.Assets(s), "log-bundle-20250101000000.tar.gz")+"\n", out.String(), "stdout is the bundle path")
	got, _ := os.ReadFile(calls)
	assert.Contains(t, string(got), "gather bootstrap --dir "+labdir.Assets(s)+" --bootstrap 192.168.126.10 --master 192.168.126.11 --master 192.168.126.12 --master 192.168.126.13 --key "+labdir.SSHKey(s))
}

func TestManualBootstrapFlag(t *testing.T) {
	require.NotNil(t, NewCmdUp(testFactory(), nil).Flags().Lookup("manual-bootstrap"), "lab up has --manual-bootstrap")
	for _, c := range []struct {
		args []string
		want any
	}{{[]string{"--manual-bootstrap"}, true}, {nil, nil}, {[]string{"--manual-bootstrap=false"}, false}} {
		var got any
		cmd := NewCmdUp(testFactory(), func(o *UpOptions) error {
			if o.ManualBootstrap != nil {
				got = *o.ManualBootstrap
			}
			return nil
		})
		cmd.SetArgs(c.args)
		require.NoError(t, cmd.Execute())
		assert.Equal(t, c.want, got, "%v", c.args)
	}
}

// --manual-bootstrap on a probe lab is applied before defaults: the spec
// records it and the bootstrap gets the rehearsal size; without it the
// probe lab keeps its sizes.
func TestManualBootstrapProbeSpec(t *testing.T) {
	isolatedHost(t)
	t.Setenv(cmdutil.EnvLab, "mb")
	for _, manual := range []bool{true, false} {
		var sf cmdutil.SpecFlags
		cmdutil.AddSpecFlags(&cobra.Command{}, &sf)
		sf.File = filepath.Join(t.TempDir(), "absent.yaml")
		sf.LabDir = t.TempDir()
		sf.ManualBootstrap = &manual
		s, err := sf.Load()
		require.NoError(t, err)
		assert.Equal(t, manual, s.OpenShift.ManualBootstrap)
		assert.Equal(t, manual, s.Rehearsal())
		bs := s.NodesByRole(spec.RoleBootstrap)[0]
		masters := s.NodesByRole(spec.RoleMaster)
		if manual {
			assert.Equal(t, spec.RehearsalBootstrapMemoryMiB, bs.MemoryMiB)
			assert.Equal(t, spec.RehearsalMasterMemoryMiB, masters[0].MemoryMiB, "a rehearsal master runs real etcd")
		} else {
			assert.Equal(t, 256, bs.MemoryMiB)
			assert.Equal(t, 256, masters[0].MemoryMiB)
		}
	}
}

// clusterCSRs is approve-csrs' look at a test API server: the review
// lab.CSRApprover does, on a client the test made.
type clusterCSRs struct {
	api   *cluster.Client
	nodes []cluster.LabNode
}

func (c clusterCSRs) Review(ctx context.Context, dryRun bool) ([]lab.CSRReview, error) {
	return cluster.ReviewAndApprove(ctx, c.api, c.nodes, dryRun, nil)
}
