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
	13: "wait-for-etcd runs the node's real etcdctl against the real etcd. cluster-bootstrap is a bootlab stand-in: it lands the bootstrap pods, and the kubelet stand-in runs the release's kube-apiserver, kube-controller-manager and kube-scheduler from the Kubernetes volume; once https://localhost:6443/readyz says ok it creates OpenShift's CRDs (bootlab's reduced schemas of openshift/api's) and every manifest through that real API, as cluster-bootstrap does. The masters fetch their config from stage 12's MCS and their etcd members join once this API answers, as upstream's join once the etcd operator runs in the cluster; each master's installer stand-in then copies its revision from this API and its kubelet stand-in starts the master's own kube-apiserver. The required-pods wait holds, as upstream's in an HA cluster, until 2 of 3 masters (every master of a smaller cluster) serve their own kube-apiserver and joined as Ready Nodes, says which required pods a rehearsal lab does not run, and tears the temporary control plane down. Then it does what upstream's cluster-bootstrap does not: it creates ConfigMap kube-system/bootstrap (status complete) through the bootstrap's API, so the etcd operator's teardown can run before stage 14's wait-for-ceo. Upstream that ConfigMap is written later, by report-progress.sh (progress.service) after .bootkube.done (stage 15) and, on an HA control plane, after 2 kube-apiserver revisions (4.18+) or 2 endpoint IPs (4.16/4.17).",
	14: "The oc stand-in sends `oc patch clusterversion` for real (HTTPS with the kubeconfig's CA and client certificate) through the load balancer to the masters' real kube-apiservers, which apply the merge patch. The kubelet stand-in stops the bootstrap MCS when its pod's manifest goes. wait-for-ceo is a stand-in: it reads the etcd operator's status (etcds/cluster) through the real API, where the first master's etcd operator stand-in writes EtcdBootstrapMemberRemoved from the real etcd member list. The masters' etcd members are real etcd: each master was added as a learner and promoted once it had its config and stage 13's API answered (1 -> 4 members), and the etcd operator's bootstrap teardown, played by the first master's agent, removes etcd-bootstrap once every master is healthy and stage 13's stand-in has created ConfigMap kube-system/bootstrap (4 -> 3; upstream, progress.service writes it after stage 15).",
	15: "Nothing is stood in on the node: real curl checks the API names through the load balancer, where the masters' real kube-apiservers answer, and the stage writes .bootkube.done. Then `bootlab lab pivot`.",
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
