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
	13: "wait-for-etcd runs the node's real etcdctl against the real etcd. cluster-bootstrap is a bootlab stand-in: it lands the bootstrap pods (the kube-apiserver pod starts bootlab's API stand-in on 6443), waits for the masters' API through api-int (the masters fetch their config from stage 12's MCS and their etcd members join once this API stand-in answers, as upstream's join once the etcd operator runs in the cluster; no revisions are waited for), creates nothing (there is no real API) and tears the temporary control plane down. Then it does what upstream's cluster-bootstrap does not: it writes ConfigMap kube-system/bootstrap (status complete) into the real etcd, where the API server would keep it, so the etcd operator's teardown can run during stage 14. Upstream that ConfigMap is written later, by report-progress.sh (progress.service) after .bootkube.done (stage 15) and, on an HA control plane, after 2 kube-apiserver revisions (4.18+) or 2 endpoint IPs (4.16/4.17).",
	14: "The oc stand-in sends `oc patch clusterversion` for real (HTTPS with the kubeconfig's CA and client certificate) to the masters' API stand-in, which applies the merge patch in memory. The kubelet stand-in stops the bootstrap MCS when its pod's manifest goes. wait-for-ceo is a stand-in: it reads the etcd operator's status from the masters' API stand-in, which reads the real etcd member list. The masters' etcd members are real etcd: each master is added as a learner and promoted once it has its config and stage 13's API answers (1 -> 4 members), and the etcd operator's bootstrap teardown, played by the first master's agent, removes etcd-bootstrap once every master is healthy and stage 13's stand-in has written ConfigMap kube-system/bootstrap (4 -> 3; upstream, progress.service writes it after stage 15).",
	15: "Nothing is stood in on the node: real curl checks the API names through the load balancer, where the masters' probe agents answer, and the stage writes .bootkube.done. Then `bootlab lab pivot`.",
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
