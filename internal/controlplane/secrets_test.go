package controlplane_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/internal/controlplane"
	"github.com/bootlab/bootlab/internal/pki"
	"github.com/bootlab/bootlab/internal/testutil/cptest"
	"github.com/bootlab/bootlab/lab/probe"
)

func reader(files map[string][]byte) controlplane.ReadSecret {
	return func(name string) ([]byte, error) {
		b, ok := files[name]
		if !ok {
			return nil, fmt.Errorf("open %s: %w", name, os.ErrNotExist)
		}
		return b, nil
	}
}

// The lab's files pass every component's check; a missing file, a serving
// certificate of another CA, a key that is not the certificate's and a
// service-account public key of another pair are each refused by name.
func TestCheckSecrets(t *testing.T) {
	t.Parallel()
	files, _ := cptest.Secrets(t)
	for _, c := range controlplane.Components() {
		require.NoError(t, controlplane.CheckSecrets(c, reader(files)), c)
	}
	other, err := pki.NewCA("someone-else")
	require.NoError(t, err)
	foreign, err := probe.ControlPlaneTLS(other, "ocp.lab.local", controlplane.DefaultServiceCIDR)
	require.NoError(t, err)
	byName := map[string][]byte{}
	for _, f := range foreign {
		byName[f.Name] = f.Data
	}
	for name, tc := range map[string]struct {
		file string
		data []byte // nil removes the file
		want string
	}{
		"missing etcd client":                 {controlplane.EtcdClientCert, nil, "etcd-client.crt: open etcd-client.crt"},
		"serving of another CA":               {controlplane.LBServerCert, byName[controlplane.LBServerCert], "kube-apiserver-lb-server.crt: not signed by its CA"},
		"key of another cert":                 {controlplane.LocalhostServerKey, files[controlplane.LBServerKey], "kube-apiserver-localhost-server.crt: its key is not the certificate's"},
		"sa of another pair":                  {controlplane.ServiceAccountPub, byName[controlplane.ServiceAccountPub], "service-account.pub is not the public key of service-account.key"},
		"etcd client of the lab CA's sibling": {controlplane.EtcdCABundle, other.CertPEM, "etcd-client.crt: not signed by its CA"},
	} {
		t.Run(name, func(t *testing.T) {
			changed := map[string][]byte{}
			for k, v := range files {
				changed[k] = v
			}
			if tc.data == nil {
				delete(changed, tc.file)
			} else {
				changed[tc.file] = tc.data
			}
			err := controlplane.CheckSecrets(controlplane.KubeAPIServer, reader(changed))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// The controller manager's kubelet-signer must be a CA with its key.
	for name, tc := range map[string]struct {
		file string
		data []byte
		want string
	}{
		"signer key of another pair": {controlplane.KubeletSignerKey, files[controlplane.ServiceAccountKey], "kubelet-signer.key is not the key of kubelet-signer.crt"},
		"signer that is no CA":       {controlplane.KubeletSignerCert, files[controlplane.LBServerCert], "kubelet-signer.crt is not a CA certificate"},
		"no signer":                  {controlplane.KubeletSignerCert, nil, "kubelet-signer.crt: open"},
	} {
		t.Run(name, func(t *testing.T) {
			changed := map[string][]byte{}
			for k, v := range files {
				changed[k] = v
			}
			if tc.data == nil {
				delete(changed, tc.file)
			} else {
				changed[tc.file] = tc.data
			}
			assert.ErrorContains(t, controlplane.CheckSecrets(controlplane.KubeControllerManager, reader(changed)), tc.want)
		})
	}
	delete(files, controlplane.Kubeconfig)
	assert.ErrorContains(t, controlplane.CheckSecrets(controlplane.KubeScheduler, reader(files)), "kubeconfig")
}
