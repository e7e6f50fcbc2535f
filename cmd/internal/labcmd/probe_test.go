package labcmd

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bootlab/bootlab/lab/spec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/internal/check"
	"github.com/bootlab/bootlab/lab/verify"
)

func TestVerifyFlags(t *testing.T) {
	var got *VerifyOptions
	cmd := NewCmdVerify(testFactory(), func(o *VerifyOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"-f", "x.yaml", "-o", "json", "--timeout", "90s"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "x.yaml", got.Spec.File)
	assert.Equal(t, "json", got.Output)
	assert.Equal(t, 90*time.Second, got.Timeout)

	cmd = NewCmdVerify(testFactory(), func(o *VerifyOptions) error { t.Fatal("must not run"); return nil })
	cmd.SetArgs([]string{"-o", "yaml"})
	err := cmd.Execute()
	var ce *cmdutil.CodeError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, cmdutil.ExitUsage, ce.Code)
}

func TestProbeImageBuildFlags(t *testing.T) {
	var got *ProbeImageBuildOptions
	cmd := NewCmdProbeImageBuild(testFactory(), func(o *ProbeImageBuildOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--kernel", "/k", "--modules", "/m", "-o", "json"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, &ProbeImageBuildOptions{Kernel: "/k", Modules: "/m", Output: "json", OpenShiftVersion: spec.DefaultOpenShiftVersion}, got)

	cmd = NewCmdProbeImageBuild(testFactory(), func(o *ProbeImageBuildOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--rehearsal", "--openshift-version", "4.21.3"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, &ProbeImageBuildOptions{Output: "text", Rehearsal: true, OpenShiftVersion: "4.21.3"}, got, "the release whose etcd the rehearsal initrd carries")

	cmd = NewCmdProbeImageBuild(testFactory(), func(o *ProbeImageBuildOptions) error { t.Fatal("must not run"); return nil })
	cmd.SetArgs([]string{"--kernel", "/k"})
	err := cmd.Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--kernel and --modules go together")
}

func TestPrintVerify(t *testing.T) {
	var b bytes.Buffer
	res := &verify.Result{Checks: []check.Result{
		{Group: "host", Name: "dns api.x", State: check.StatePassed, Detail: "api.x -> 1.2.3.4"},
		{Group: "master-0", Name: "ignition-fetch", Detail: "still pending:\n x509", Fix: "rewrite the pointer"},
	}}
	require.NoError(t, printVerify(&b, res.Checks, ""))
	out := b.String()
	assert.Contains(t, out, "✓  host")
	assert.Contains(t, out, "✗  master-0  ignition-fetch")
	assert.Contains(t, out, "1 of 2 failed:")
	assert.Contains(t, out, "fix: rewrite the pointer")
	assert.False(t, strings.Contains(out, "pending:\n"), "details are one line")
}
