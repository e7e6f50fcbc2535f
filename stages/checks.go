package stages

import (
	"context"
	"slices"

	"github.com/bootlab/bootlab/internal/controlplane"
)

// The checks of each stage: what bootkube's step leaves on the node.

const (
	etcKube          = "/etc/kubernetes"
	bootstrapSecrets = "/etc/kubernetes/bootstrap-secrets"
	bootstrapConfigs = "/etc/kubernetes/bootstrap-configs"
	etcdPod          = "/etc/kubernetes/manifests/etcd-member-pod.yaml"
	mcoPod           = "/etc/kubernetes/manifests/machineconfigoperator-bootstrap-pod.yaml"
	etcdResources    = "/etc/kubernetes/static-pod-resources/etcd-member"
)

func checksOpenShiftManifests() []Check {
	return []Check{
		marker("openshift-manifests.done"),
		dir(etcKube + "/manifests"),
		dir(bootstrapConfigs),
		dir(opt("bootstrap-manifests")),
		manifest(opt("manifests/cluster-config.yaml"), "ConfigMap", "cluster-config-v1"),
		manifest(opt("manifests/cluster-infrastructure-02-config.yml"), "Infrastructure", "cluster"),
		manifest(opt("manifests/cluster-network-02-config.yml"), "Network", "cluster"),
		manifest(opt("manifests/99_feature-gate.yaml"), "FeatureGate", "cluster"),
		// The installer's inputs every later stage needs.
		file(opt("auth/kubeconfig"), 0o600),
		file(opt("auth/kubeconfig-loopback"), 0o600),
		file(opt("auth/kubeconfig-kubelet"), 0o600),
		cert(opt("tls/root-ca.crt")),
	}
}

func checksReleaseImage() []Check {
	keys := []string{"VERSION", "RELEASE_IMAGE_DIGEST",
		"MACHINE_CONFIG_OPERATOR_IMAGE", "MACHINE_CONFIG_ETCD_IMAGE", "MACHINE_CONFIG_INFRA_IMAGE",
		"CLUSTER_ETCD_OPERATOR_IMAGE", "API_IMAGE", "CONFIG_OPERATOR_IMAGE",
		"KUBE_APISERVER_OPERATOR_IMAGE", "KUBE_CONTROLLER_MANAGER_OPERATOR_IMAGE",
		"KUBE_SCHEDULER_OPERATOR_IMAGE", "INGRESS_OPERATOR_IMAGE", "NODE_TUNING_OPERATOR_IMAGE",
		"CLOUD_CREDENTIAL_OPERATOR_IMAGE", "OPENSHIFT_HYPERKUBE_IMAGE",
		"OPENSHIFT_CLUSTER_POLICY_IMAGE", "CLUSTER_BOOTSTRAP_IMAGE"}
	// KUBERNETES_VERSION is bootkube's from 4.18 (gates.go); before, the
	// script leaves it empty. auth-api-bootstrap (4.19+) needs the
	// authentication operator too.
	before418 := envFile(ImagesFile, keys...)
	from418 := envFile(ImagesFile, append(slices.Clone(keys), "KUBERNETES_VERSION")...)
	from419 := envFile(ImagesFile, append(slices.Clone(keys), "KUBERNETES_VERSION", "AUTH_OPERATOR_IMAGE")...)
	return []Check{{Name: from419.Name, Run: func(ctx context.Context, e *CheckEnv) error {
		switch {
		case e.Vars.Version.Less(Version{4, 18}):
			return before418.Run(ctx, e)
		case e.Vars.Version.Less(Version{4, 19}):
			return from418.Run(ctx, e)
		}
		return from419.Run(ctx, e)
	}}}
}

func checksAPIBootstrap() []Check {
	return []Check{
		marker("api-bootstrap.done"),
		featureGates(opt("manifests/99_feature-gate.yaml")),
		manifestIn(opt("api-bootstrap/manifests"), "CustomResourceDefinition", ""),
	}
}

func checksAuthAPI() []Check {
	return []Check{
		marker("auth-api-bootstrap.done"),
		manifestIn(opt("auth-api-bootstrap/manifests"), "CustomResourceDefinition", "rolebindingrestrictions.authorization.openshift.io"),
		manifestIn(opt("manifests"), "CustomResourceDefinition", "rolebindingrestrictions.authorization.openshift.io"),
	}
}

func checksConfig() []Check {
	return []Check{
		marker("config-bootstrap.done"),
		file(opt("config-bootstrap/config"), 0),
		file(opt("config-bootstrap/cloud-provider-config-generated.yaml"), 0),
	}
}

func checksCVO() []Check {
	return []Check{
		marker("cvo-bootstrap.done"),
		staticPodIn(opt("bootstrap-manifests"), PodWant{
			Namespace: "openshift-cluster-version", Name: "bootstrap-cluster-version-operator",
			Containers: []string{"cluster-version-operator"},
			HostPaths:  []string{etcKube + "/kubeconfig"},
		}),
		file(etcKube+"/kubeconfig", 0o600),
	}
}

func checksEtcd() []Check {
	return []Check{
		marker("etcd-bootstrap.done"),
		staticPod(etcdPod, PodWant{
			Namespace: "openshift-etcd", Name: "etcd-bootstrap-member",
			Containers: []string{"etcd"},
			HostPaths:  []string{etcdResources, "/var/lib/etcd"},
		}),
		cert(etcdResources + "/ca.crt"),
		cert(opt("tls/etcd-ca-bundle.crt")),
		cert(opt("tls/etcd-client.crt")),
		key(opt("tls/etcd-client.key")),
		undoneBy(BootkubeDone, "after .bootkube.done progress.service writes kube-system/bootstrap and the etcd operator removes the bootstrap member; its etcd exits",
			https("etcd answers healthy on https://localhost:2379/health", "https://localhost:2379/health", `"health":"true"`, etcdClient()...)),
		undoneBy(BootkubeDone, "the bootstrap member goes after stage 15", etcdServerMinor()),
	}
}

func etcdClient() []string {
	return []string{"--cacert", opt("tls/etcd-ca-bundle.crt"), "--cert", opt("tls/etcd-client.crt"), "--key", opt("tls/etcd-client.key")}
}

// etcdServerMinor checks that the member is the release's etcd (3.5
// through 4.20): /version answers {"etcdserver":"3.5.21",...}.
func etcdServerMinor() Check {
	const url = "https://localhost:2379/version"
	c := Check{Name: "etcd is the release's minor (3.5; 3.6 from 4.21) on " + url, Live: true}
	c.Run = func(ctx context.Context, e *CheckEnv) error {
		return https(c.Name, url, `"etcdserver":"`+e.Vars.Version.EtcdMinor()+`.`, etcdClient()...).Run(ctx, e)
	}
	return c
}

// undoneBy runs c, and lets it pass when it fails once marker exists: a
// later stage took down what c looks at, as bootkube does on every
// bootstrap (stage 14 removes the bootstrap MCS's pod; after .bootkube.done
// the etcd operator's teardown removes the bootstrap etcd member, once
// progress.service has written kube-system/bootstrap).
// The check's name says so.
func undoneBy(marker, why string, c Check) Check {
	run := c.Run
	c.Name += " (until " + marker + ": " + why + ")"
	c.Reads = append(slices.Clone(c.Reads), opt(marker))
	c.Run = func(ctx context.Context, e *CheckEnv) error {
		err := run(ctx, e)
		if err == nil {
			return nil
		}
		if _, serr := e.Node.Stat(ctx, opt(marker)); serr == nil {
			return nil
		}
		return err
	}
	return c
}

func checksKAS() []Check {
	return []Check{
		marker("kube-apiserver-bootstrap.done"),
		manifest(bootstrapConfigs+"/kube-apiserver-config.yaml", "KubeAPIServerConfig", ""),
		staticPodIn(opt("bootstrap-manifests"), PodWant{
			Namespace: "openshift-kube-apiserver", Name: "bootstrap-kube-apiserver",
			Containers: []string{"kube-apiserver"},
			HostPaths:  []string{bootstrapSecrets, bootstrapConfigs},
		}),
		controlPlanePod(controlplane.KubeAPIServer),
	}
}

func checksKCM() []Check {
	return []Check{
		marker("kube-controller-manager-bootstrap.done"),
		file(bootstrapConfigs+"/kube-controller-manager-config.yaml", 0),
		file(bootstrapConfigs+"/cluster-policy-controller-config.yaml", 0),
		staticPodIn(opt("bootstrap-manifests"), PodWant{
			Namespace: "kube-system", Name: "bootstrap-kube-controller-manager",
			Containers: []string{"kube-controller-manager", "cluster-policy-controller"},
			HostPaths:  []string{bootstrapSecrets, bootstrapConfigs},
		}),
		controlPlanePod(controlplane.KubeControllerManager),
	}
}

func checksScheduler() []Check {
	return []Check{
		marker("kube-scheduler-bootstrap.done"),
		file(bootstrapConfigs+"/kube-scheduler-config.yaml", 0),
		staticPodIn(opt("bootstrap-manifests"), PodWant{
			Namespace: "kube-system", Name: "bootstrap-kube-scheduler",
			Containers: []string{"kube-scheduler"},
			HostPaths:  []string{bootstrapSecrets, bootstrapConfigs},
		}),
		controlPlanePod(controlplane.KubeScheduler),
	}
}

func checksIngress() []Check {
	return []Check{
		marker("ingress-operator-bootstrap.done"),
		marker("node-tuning-bootstrap.done"),
		manifestIn(opt("ingress-operator-manifests"), "CustomResourceDefinition", "ingresscontrollers.operator.openshift.io"),
		manifestIn(opt("manifests"), "CustomResourceDefinition", "ingresscontrollers.operator.openshift.io"),
	}
}

func checksMCO() []Check {
	return []Check{
		marker("mco-bootstrap.done"),
		marker("cco-bootstrap.done"),
		undoneBy("cvo-overrides.done", "stage 14 removes the bootstrap MCO pod", staticPod(mcoPod, PodWant{
			Namespace: "openshift-machine-config-operator", Name: "bootstrap-machine-config-operator",
			Containers:     []string{"machine-config-server"},
			InitContainers: []string{"machine-config-controller"},
			HostPaths:      []string{"/etc/ssl/mcs", "/etc/mcs/kubeconfig", "/etc/mcs/bootstrap", "/etc/mcc/bootstrap"},
		})),
		manifestIn("/etc/mcc/bootstrap", "MachineConfigPool", "master"),
		file("/etc/mcs/kubeconfig", 0o600),
		cert("/etc/ssl/mcs/tls.crt"),
		key("/etc/ssl/mcs/tls.key"),
		undoneBy("cvo-overrides.done", "stage 14 stops the bootstrap MCS",
			https("the bootstrap MCS answers on https://localhost:22623/healthz", "https://localhost:22623/healthz", "", "--insecure")),
	}
}

func checksClusterBootstrap() []Check {
	return []Check{
		marker("cb-bootstrap.done"),
		absent(bootstrapSecrets, "cluster-bootstrap removes it when it tears the temporary control plane down"),
		staticPod(etcdPod, PodWant{
			Namespace: "openshift-etcd", Name: "etcd-bootstrap-member",
			Containers: []string{"etcd"},
			HostPaths:  []string{etcdResources, "/var/lib/etcd"},
		}),
		https("the masters' API answers https://$API_INT_URL:6443/readyz", "https://$API_INT_URL:6443/readyz", "ok", "--insecure"),
		apiReadyz(),
		apiBootstrapSuccessEvent(),
		apiControlPlanePodsReady(),
	}
}

func checksCVOOverrides() []Check {
	return []Check{
		marker("cvo-overrides.done"),
		absent(mcoPod, "bootkube removes the bootstrap MCS after cluster-bootstrap"),
		apiMastersReady(),
	}
}

func checksComplete() []Check {
	return []Check{
		marker(BootkubeDone),
		https("https://$API_URL:6443/readyz answers ok", "https://$API_URL:6443/readyz", "ok", "--insecure"),
		https("https://$API_INT_URL:6443/readyz answers ok", "https://$API_INT_URL:6443/readyz", "ok", "--insecure"),
	}
}
