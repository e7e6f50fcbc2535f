// Package loadbalancer renders the lab's haproxy.cfg and runs haproxy as a
// supervised process of the lab: a pid file, a stats admin socket, reload on
// change and a stop that kills only our own haproxy.
//
// It follows the UPI load balancer of the OpenShift docs: layer-4 TCP,
// roundrobin, no session persistence, an HTTPS /readyz check on 6443 and an
// HTTPS /healthz check on 22623. It imports no other bootlab package.
package loadbalancer
