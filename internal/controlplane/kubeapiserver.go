package controlplane

import (
	"strconv"
	"strings"
)

// The kube-apiserver's flags, the bootstrap's and the masters': the
// settings of OpenShift's KubeAPIServerConfig that the release's upstream
// kube-apiserver accepts as flags. OpenShift's pods pass that config with
// --openshift-config, which upstream's binary has not. The values are the
// kube-apiserver operator's (KASO) bindata/assets/config/defaultconfig.yaml,
// which both the bootstrap's render and the masters' revisions start from,
// with bindata/bootkube/config/bootstrap-config-overrides.yaml on top for
// the bootstrap, read on its release-4.16 to release-4.22 branches
// (release-4.19 at 1b48403438c3). What the lab cannot give as OpenShift
// does is in Differences, with the reason.

// ShutdownDelay is OpenShift's --shutdown-delay-duration (defaultconfig.yaml:
// time for load balancers to take a stopping kube-apiserver out) and
// TerminationGracePeriod its pods' terminationGracePeriodSeconds (the
// render's 135: the 70 s and 60 s more for requests in flight).
const (
	ShutdownDelay          = "70s"
	TerminationGracePeriod = 135
)

// EtcdCheckTimeout is how long kube-apiserver's /healthz and /readyz wait
// for etcd: OpenShift's 9 s (defaultconfig.yaml etcd-healthcheck-timeout
// and etcd-readycheck-timeout), not upstream's 2 s, with which the
// masters' /readyz flapped under TCG (measured on VMs).
const EtcdCheckTimeout = "9s"

// The names OpenShift's bootstrap config serves its service-network and
// localhost certificates for (bootstrap-config-overrides.yaml
// servingInfo.namedCertificates); the load balancer's certificates are
// served for the names they carry.
var (
	serviceNetworkNames = []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	localhostNames      = []string{"localhost", "127.0.0.1", "::1"}
)

// pair is a certificate and its key, as a pod reads them.
type pair struct{ cert, key string }

// sni is --tls-sni-cert-key's value for p, served for names (none: the
// certificate's own names).
func (p pair) sni(names ...string) string {
	v := p.cert + "," + p.key
	if len(names) > 0 {
		v += ":" + strings.Join(names, ",")
	}
	return v
}

// apiServerFiles are the files a kube-apiserver's flags name, where its
// pod reads them.
type apiServerFiles struct {
	etcdCA     string
	etcdClient pair
	// serviceNetwork is the default serving pair; namedServing lists the
	// SNI pairs with the names each is served for.
	serviceNetwork pair
	namedServing   []string
	clientCA       string
	saVerify       []string
	saSign         string
	kubeletCA      string
	kubeletPair    pair
}

// apiServerSettings is what else a kube-apiserver's flags depend on.
type apiServerSettings struct {
	advertise, bind string
	port            int
	etcdServers     string
	serviceCIDR     string
	openshift       string
	featureGates    FeatureGates
	// extra are flags of one kind of pod (the masters'
	// --permit-address-sharing).
	extra []string
}

// kubeAPIServerArgs are OpenShift's settings as flags, in the order of
// defaultconfig.yaml's apiServerArguments (by name), the addresses and
// ports first.
func kubeAPIServerArgs(s apiServerSettings, f apiServerFiles) []string {
	var args []string
	if s.advertise != "" {
		args = append(args, "--advertise-address="+s.advertise)
	}
	args = append(args, "--bind-address="+s.bind, "--secure-port="+strconv.Itoa(s.port))
	args = append(args, s.extra...)
	args = append(args,
		"--allow-privileged=true",
		"--anonymous-auth=true",
		"--api-audiences="+ServiceAccountIssuer,
		// OpenShift's Scope, SystemMasters, RBAC, Node: the two upstream
		// authorizers in its order (OpenShiftOnly lists the others).
		"--authorization-mode=RBAC,Node",
		"--client-ca-file="+f.clientCA,
		"--enable-admission-plugins="+strings.Join(admissionPlugins(s.openshift), ","),
		"--enable-aggregator-routing=true",
		"--enable-logs-handler=false",
		"--endpoint-reconciler-type=lease",
		"--etcd-cafile="+f.etcdCA,
		"--etcd-certfile="+f.etcdClient.cert,
		"--etcd-healthcheck-timeout="+EtcdCheckTimeout,
		"--etcd-keyfile="+f.etcdClient.key,
		"--etcd-prefix=kubernetes.io", // not upstream's /registry
		"--etcd-readycheck-timeout="+EtcdCheckTimeout,
		"--etcd-servers="+s.etcdServers,
		"--event-ttl=3h",
	)
	if gates := KubernetesFeatureGates(s.featureGates, s.openshift); len(gates) > 0 {
		args = append(args, "--feature-gates="+strings.Join(gates, ","))
	}
	args = append(args,
		"--goaway-chance="+goawayChance(s.openshift),
		"--http2-max-streams-per-connection=2000",
		"--kubelet-certificate-authority="+f.kubeletCA,
		"--kubelet-client-certificate="+f.kubeletPair.cert,
		"--kubelet-client-key="+f.kubeletPair.key,
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-read-only-port=0",
		"--kubernetes-service-node-port=0",
		"--max-mutating-requests-inflight=1000",
		"--max-requests-inflight=3000",
		"--min-request-timeout=3600",
	)
	if rc := RuntimeConfig(s.featureGates, s.openshift); len(rc) > 0 {
		args = append(args, "--runtime-config="+strings.Join(rc, ","))
	}
	args = append(args, "--service-account-issuer="+ServiceAccountIssuer)
	for _, k := range f.saVerify {
		args = append(args, "--service-account-key-file="+k)
	}
	args = append(args,
		"--service-account-lookup=true",
		"--service-account-signing-key-file="+f.saSign,
		"--service-cluster-ip-range="+s.serviceCIDR,
		"--service-node-port-range=30000-32767",
		"--shutdown-delay-duration="+ShutdownDelay,
		"--shutdown-send-retry-after=true",
		"--storage-backend=etcd3",
		"--storage-media-type=application/vnd.kubernetes.protobuf",
		"--strict-transport-security-directives=max-age=31536000,includeSubDomains,preload",
		// OpenShift serves the service network's certificate by default.
		"--tls-cert-file="+f.serviceNetwork.cert,
		"--tls-private-key-file="+f.serviceNetwork.key,
	)
	for _, n := range f.namedServing {
		args = append(args, "--tls-sni-cert-key="+n)
	}
	return append(args, "--v=2")
}
