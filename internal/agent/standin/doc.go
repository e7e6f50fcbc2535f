// Package standin holds the rehearsal bootstrap's stand-ins for what needs
// a release image or a cluster on a real bootstrap: sudo, podman (image_for,
// the operators' render commands, cluster-bootstrap start, wait-for-ceo),
// oc (adm release info, patch clusterversion), crictl and dig. They are the
// agent itself, linked under those names (Tools.Multicall); each says it is
// a stand-in on stderr.
package standin
