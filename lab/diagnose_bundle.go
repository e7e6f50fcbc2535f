package lab

import (
	"context"

	"github.com/bootlab/bootlab/internal/diagram"
	"github.com/bootlab/bootlab/lab/diagnose"
)

// DiagnoseBundle is `lab diagnose --bundle FILE`: the bootstrap
// troubleshooting tree walked over the log bundle at file (bootlab's, or
// openshift-install gather bootstrap's log-bundle-<id>.tar.gz). It needs no
// lab: a bundle from any machine is diagnosed the same. A file that is no
// bundle is an invalid input (InvalidInput) naming it.
func DiagnoseBundle(ctx context.Context, file string) (*diagnose.Report, error) {
	b, err := diagnose.ReadBundle(ctx, file)
	if err != nil {
		return nil, err
	}
	return diagnose.Diagnose(b, diagnose.Options{}), nil
}

// DiagnosisTree is the tree lab diagnose walks, bare: each question with
// the ids of the checks that answer it (docs/troubleshooting.md draws it).
func DiagnosisTree() *diagram.Decision { return diagnose.Tree() }
