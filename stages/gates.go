package stages

// Commits of openshift/cluster-bootstrap read for stage 13's gates: the tips
// of its release branches. pkg/start and cmd are identical from
// release-4.19 through release-4.22.
const (
	cb416 = "cluster-bootstrap release-4.16 27bfb59fd0 and release-4.17 95dd9129fa, pkg/start/start.go"
	cb418 = "cluster-bootstrap release-4.18 d1e019545a, pkg/start/start.go and ha_checker.go (commit 3b712d1be)"
	cb419 = "cluster-bootstrap release-4.19 8fde9c52fb (commit b23c6ce3d, isHAControlPlane); unchanged through release-4.22 e6be0fdfbf"
)

// CommonGates are the release-specific behaviours of every stage (the
// shared helpers of scripts/lib/bootkube.sh).
func CommonGates() []Gate { return releaseGates()[0] }

// releaseGates are the release-specific behaviours of each stage, by stage
// number (0: every stage), each with its evidence. A gate whose release is inferred (see
// Releases) is inferred too; TestGatesCarryEvidence holds the data to the
// scripts' version_at_least calls.
func releaseGates() map[int][]Gate {
	v := MustVersion
	verified := func(src string) Evidence { return Evidence{Verified: true, Source: src} }
	inferred := func(src string) Evidence { return Evidence{Source: src} }
	konnectivity := inferred("installer PR #10344 (CORS-4334); 4.22 bootkube.sh not read: the call sites are modelled")
	logDriver := Gate{Since: v("4.21"), What: "every bootkube container runs with --log-driver=k8s-file",
		Evidence: inferred("seen in bootkube_podman_run on installer main; PR not identified, 4.21 bootkube.sh not read")}
	return map[int][]Gate{
		0: {logDriver},
		2: {
			{Since: v("4.18"), What: "KUBERNETES_VERSION from `oc adm release info` (a second oc call)", Evidence: verified("installer 58a7d55b2e (2024-09), on release-4.18")},
			{Since: v("4.19"), What: "AUTH_OPERATOR_IMAGE (cluster-authentication-operator) for stage 04", Evidence: verified("installer 9d0ac1673b (2025-02), on release-4.19")},
			{Since: v("4.22"), What: "KONNECTIVITY_IMAGE (apiserver-network-proxy)", Evidence: konnectivity},
		},
		4: {
			{Since: v("4.19"), What: "the auth-api-bootstrap step exists", Evidence: verified("installer 9d0ac1673b (2025-02), on release-4.19")},
		},
		6: {
			{Since: v("4.17"), What: "CVO render --feature-gate-manifest-path", Evidence: verified("installer PR #8813 (9bbe172d4f, 2024-08), on release-4.17")},
			{Since: v("4.22"), What: "CVO render --cluster-version-manifest-path", Evidence: inferred("installer PR #10295; 4.22 bootkube.sh not read")},
		},
		8: {
			{Since: v("4.18"), What: "KAS render --operand-kubernetes-version", Evidence: verified("installer 58a7d55b2e (2024-09), on release-4.18")},
			{Since: v("4.22"), What: "konnectivity-certs, konnectivity-server-bootstrap, konnectivity-agent-manifest before the KAS render, when the installer enables konnectivity", Evidence: konnectivity},
		},
		12: {
			{Since: v("4.16"), What: "guard manifests/openshift-lbconfig-custom-dns.yaml, flag --cloud-lb-config-file=/assets/manifests/openshift-lb-config.yaml (upstream's mismatch, dormant)", Evidence: verified("installer d890032ba6 (2023-11-01); release-4.16 to release-4.19 read")},
			{Since: v("4.19"), What: "aws static pods copied from mco-bootstrap/aws", Evidence: verified("installer release-4.19 bootkube.sh.template, read")},
			{Since: v("4.21"), What: "image-references copied to /etc/mcc/bootstrap", Evidence: inferred("installer PR #10134; 4.21 bootkube.sh not read")},
			{Since: v("4.21"), What: "azure static pods copied from mco-bootstrap/azure", Evidence: inferred("seen on installer main; PR not identified, 4.21 bootkube.sh not read")},
		},
		13: {
			{Since: v("4.16"), Until: v("4.17"), What: "cluster-bootstrap: unless single-node, waits for 2 master Nodes inside the 20-minute required-pods budget; no load-balancer delay; tears down before the bootstrap-finished event", Evidence: verified(cb416)},
			{Since: v("4.18"), Until: v("4.18"), What: "cluster-bootstrap: unless single-node, waits up to 30 minutes for a revision on 2 nodes (kube-apiserver, scheduler, controller manager), then at least 30 s for load balancers; bootstrap-finished before teardown", Evidence: verified(cb418)},
			{Since: v("4.19"), What: "cluster-bootstrap: the same waits, gated on an HA control plane (controlPlane.replicas >= 3) instead of not single-node", Evidence: verified(cb419)},
		},
		14: {
			{Since: v("4.22"), What: "konnectivity-cleanup before cvo-overrides", Evidence: konnectivity},
		},
		15: {
			{Since: v("4.16"), Until: v("4.17"), What: "progress.service (after .bootkube.done): with an HA topology, waits for 2 endpoint IPs of default/kubernetes", Evidence: verified("installer wait-for-ha-api.sh at 2989c4559a, read; release-4.16/4.17 audited (shared reference)")},
			{Since: v("4.18"), What: "progress.service: waits for 2 nodes with a kube-apiserver revision, printing \"at least 3 available IP addresses\"", Evidence: verified("installer release-4.18 report-progress audited (shared reference corrections)")},
		},
	}
}
