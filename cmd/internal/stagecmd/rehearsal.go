package stagecmd

import (
	"fmt"
	"strings"
)

// rehearsalNotes say, per stage, what plays the release image's part on
// a rehearsal lab (a probe lab built with --manual-bootstrap), so `stage
// explain` never hides a stand-in. See docs/rehearsal-lab.md.
var rehearsalNotes = map[int]string{
	1:  "Nothing is stood in: bash and coreutils are Debian's, /opt/openshift is laid out from the bootstrap Ignition as the installer lays it.",
	2:  "`podman run RELEASE image NAME` (image_for) and `oc adm release info` are bootlab stand-ins answering from /etc/bootlab/release.json; they say so on stderr.",
	3:  "The cluster-config-api render is a bootlab stand-in: it writes config.openshift.io CRDs (open schemas) and resolves the FeatureGate's status for the payload version.",
	4:  "The cluster-authentication-operator render is a bootlab stand-in: it writes the RoleBindingRestriction CRD.",
	5:  "The cluster-config-operator render is a bootlab stand-in: it writes the operator config and an empty cloud provider config (platform None).",
	6:  "The CVO render is a bootlab stand-in: it writes the bootstrap CVO pod and the CVO's manifests. Nothing runs the CVO on the rehearsal bootstrap.",
	7:  "The cluster-etcd-operator render is a bootlab stand-in: it writes the etcd member pod with real etcd flags and certificates signed by etcd-signer (an intermediate of the lab CA). The kubelet stand-in then starts real etcd (Debian's etcd 3.4) with that pod's flags.",
	8:  "The kube-apiserver operator render is a bootlab stand-in: it writes the operand config and the bootstrap pod.",
	9:  "The kube-controller-manager operator render is a bootlab stand-in: it writes the operand and cluster-policy-controller configs and the bootstrap pod.",
	10: "The kube-scheduler operator render is a bootlab stand-in: it writes the operand config and the bootstrap pod.",
	11: "The ingress and node tuning operator renders are bootlab stand-ins: the IngressController CRD, and nothing for node tuning.",
	12: "`machine-config-operator bootstrap` and the cloud-credential-operator render are bootlab stand-ins; when the bootstrap MCO pod lands, the kubelet stand-in starts bootlab's bootstrap Machine Config Server on 22623, and the masters get their config. `dig` is bootlab's small dig (real A queries).",
	13: "wait-for-etcd runs the node's real etcdctl against the real etcd. cluster-bootstrap is a bootlab stand-in that does what the release's pkg/start does: it lands the bootstrap pods (each file created exclusively), and the kubelet stand-in runs the release's kube-apiserver, kube-controller-manager and kube-scheduler from the Kubernetes volume; any answer from https://localhost:6443/readyz ends its API wait; then it creates every manifest (OpenShift's CRDs among them, bootlab's reduced schemas of openshift/api's) through that real API in the background, in the files' lexical order with a round every 200 ms, while it waits for the required pods. The masters fetch their config from stage 12's MCS and their etcd members join once this API answers, as upstream's join once the etcd operator runs in the cluster; each master's installer stand-in then copies its revision from this API and its kubelet stand-in starts the master's own control plane, whose mirror pods end the required-pods wait (the cluster version operator, which a rehearsal lab does not run, is named, never shown Running). On a control plane of 3 masters (2 or more before 4.19) it then waits as the release does: two master Nodes (4.16, 4.17) or a current revision on two nodes of each control-plane operator, which the installer stand-ins write (4.18 on), and 30 s for the load balancers (4.18 on). It sends the bootstrap-success and bootstrap-finished events and tears the temporary control plane down (4.16, 4.17: teardown before bootstrap-finished). It does not write ConfigMap kube-system/bootstrap: progress.service does, after stage 15.",
	14: "The oc stand-in sends `oc patch clusterversion` for real (HTTPS with the kubeconfig's CA and client certificate) through the load balancer to the masters' real kube-apiservers, which apply the merge patch. The kubelet stand-in stops the bootstrap MCS when its pod's manifest goes. wait-for-ceo is a stand-in: it reads the etcd operator's status (etcds/cluster) through the real API until EtcdRunningInCluster is True, which the first master's etcd operator stand-in writes once every master is a healthy voting member of the real etcd (1 -> 4 members during stage 13). It returns with etcd-bootstrap still a member: the operator's bootstrap teardown removes it only once ConfigMap kube-system/bootstrap says complete, which progress.service writes after stage 15.",
	15: "Nothing is stood in on the node: real curl checks the API names through the load balancer, where the masters' real kube-apiservers answer, and the stage writes .bootkube.done. Then progress.service (a stand-in of report-progress.sh, running since boot) creates ConfigMap kube-system/bootstrap through api-int, and the first master's etcd operator stand-in removes etcd-bootstrap (4 -> 3); the masters' kube-apiservers get a revision without it. Then `bootlab lab pivot`.",
}

// rehearsalSection is the explain page's closing section for stage n.
func rehearsalSection(n int) string {
	note, ok := rehearsalNotes[n]
	if !ok {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## On a rehearsal lab\n\n")
	fmt.Fprintf(&b, "On a probe lab built with `bootlab lab up --manual-bootstrap` this stage runs over SSH on the\n")
	fmt.Fprintf(&b, "rehearsal bootstrap, the same script as on a real node. %s\n", note)
	return b.String()
}
