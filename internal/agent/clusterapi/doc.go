// Package clusterapi is the API stand-in of a rehearsal lab's masters.
// Besides the health endpoints it answers the two calls stage 14 makes:
// `oc patch clusterversion version` (a JSON merge patch, kept in memory:
// there is no real kube-apiserver) and wait-for-ceo's read of the etcd
// operator's status (Etcd "cluster"), whose conditions come from the real
// etcd member list on this master. Only the agent's wiring imports it.
package clusterapi
