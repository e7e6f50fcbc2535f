// Package scripts embeds the bash each `bootlab stage` runs on the
// bootstrap node (NN-<slug>.sh) and the library they share (lib/bootkube.sh),
// so the binary sends exactly the files a learner reads in the repository.
package scripts

import "embed"

// FS holds NN-<slug>.sh and lib/bootkube.sh.
//
//go:embed *.sh lib/*.sh
var FS embed.FS
