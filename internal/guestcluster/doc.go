// Package guestcluster is the rehearsal lab's cluster as the probe agent
// plays it around the release's real Kubernetes binaries, one directory per
// component it plays (see docs/architecture.md, "The guest cluster"). Only
// the agent (internal/agent, cmd/bootlab-probe) imports it; it imports no
// agent package and nothing under lab/.
package guestcluster
