// Package endpoints is what a probe node serves in place of the cluster's
// own endpoints behind the lab's load balancer: a Machine Config Server
// stand-in on 22623 (GET /config/<pool> answered as the real one answers
// it: status codes, the Accept header's spec version), an API that
// answers its health checks on 6443, and an ingress on 80 and 443. Each
// names the node that answered in wire.NodeHeader, which verify reads.
// It imports no other agent package: the agent, the masters' API
// stand-in and the kubelet stand-in's tests use it.
package endpoints
