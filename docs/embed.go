// Package docs embeds the learner-facing pages that `bootlab stage explain`
// prints: docs/stages/NN-<slug>.md, one per stage, and docs/stages/README.md.
package docs

import "embed"

// Stages holds stages/*.md.
//
//go:embed stages/*.md
var Stages embed.FS
