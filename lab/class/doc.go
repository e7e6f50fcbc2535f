// Package class turns one class spec (a lab template, the learners, an
// address pool, per-learner overrides) into one lab spec per learner, checks
// the labs together (distinct names, networks, bridges, MACs and load
// balancer addresses; no overlap with the host's routes, its libvirt
// networks or other labs; memory and disk for all of them) before anything
// is created, builds them with bounded parallelism and writes each learner a
// handout. Every lab is an ordinary lab: `bootlab lab ... --name LAB` acts on it.
package class
