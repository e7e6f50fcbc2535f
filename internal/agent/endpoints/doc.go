// Package endpoints is what a probe node serves in place of the cluster's
// own endpoints behind the lab's load balancer: a Machine Config Server
// stand-in on 22623 (GET /config/<pool> answered as the real one answers
// it: status codes, the Accept header's spec version), an API that
// answers its health checks on 6443, and an ingress on 80 and 443. Each
// names the node that answered in wire.NodeHeader, which verify reads.
// They are a plain probe lab's fast network check; a rehearsal lab's
// bootstrap serves only the MCS from here (from stage 12). It imports no
// other agent package: the agent and the kubelet stand-in's tests use it.
package endpoints
