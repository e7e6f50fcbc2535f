// Package labdir owns a lab's directory: where every file bootlab keeps for
// a lab lives (on this machine, and the part on the hypervisor's machine),
// the lab's recorded state (state.json: its identity, the spec of the last
// successful up, what exists), the last verify result, the lock that keeps
// two commands from changing one lab at once, and the one rule that finds
// the lab a spec names (Resolve). `lab down` removes exactly Entries.
//
// It takes the spec from lab/spec and imports no other bootlab package.
// Only package lab writes state, under the lock.
package labdir
