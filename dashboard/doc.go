// Package dashboard serves `bootlab dashboard`: a read-only web page that
// draws every lab on the host (topology, load balancer health, the
// bootstrap's stages and phase, the last verify) and pushes changes to the
// page with server-sent events. Its data comes from the same library calls
// the CLI uses (lab.List, lab.Inspect, the stage records, the last verify
// result); it never reads or serves keys, pull secrets, kubeconfigs or
// Ignition.
package dashboard
