// Package stages replays the bootstrap node's bootkube.sh as fifteen
// numbered stages. Each stage is a value: its number and bootkube name, the
// bootkube steps it covers, the script it runs on the node (scripts/), the
// markers that say it is done, and Go checks that read back what it made.
// A Runner runs a selection of stages over a node.Node (SSH or local), streams
// their output with a stage prefix and keeps one JSON record per event.
//
// The package never prints: it takes a *slog.Logger, a *status.Status and
// the writers it is given.
package stages
