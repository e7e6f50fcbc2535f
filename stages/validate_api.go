package stages

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bootlab/bootlab/internal/node"
)

// The real API, read the way a learner does it on the node: kubectl with
// the admin kubeconfig the installer leaves in /opt/openshift/auth (as root:
// it is 0600). The server is api.<cluster domain>, through the load
// balancer, so the checks hold on the bootstrap (temporary control plane)
// and after the handoff (the masters). A real bootstrap has kubectl from
// RHCOS's openshift-clients, a rehearsal bootstrap from its Kubernetes
// volume: the same check on both.

// kubectlGet runs `kubectl ARGS` as root with the admin kubeconfig and
// returns its output.
func kubectlGet(ctx context.Context, n node.Node, args string) (string, error) {
	// sudo keeps the caller's PATH: kubectl is where a login finds it.
	cmd := `sudo -n env "PATH=$PATH" kubectl --kubeconfig=` + opt("auth/kubeconfig") + " --request-timeout=10s " + args
	out, err := node.Output(ctx, n, cmd)
	if err != nil {
		return "", fmt.Errorf("kubectl %s on %s: %w", args, n, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// apiReadyz checks the API answers /readyz "ok" to the admin.
func apiReadyz() Check {
	return Check{Name: "kubectl get --raw /readyz answers ok (the admin kubeconfig, through api)", Live: true,
		Run: func(ctx context.Context, e *CheckEnv) error {
			out, err := kubectlGet(ctx, e.Node, "get --raw /readyz")
			if err != nil {
				return err
			}
			if out != "ok" {
				return fmt.Errorf("/readyz answered %q, want ok", trim(out, 120))
			}
			return nil
		}}
}

// apiBootstrapConfigMap checks kube-system/bootstrap says complete, as
// cluster-bootstrap leaves it and the etcd operator's teardown reads it.
func apiBootstrapConfigMap() Check {
	return Check{Name: "kubectl get cm -n kube-system bootstrap says status complete", Live: true,
		Run: func(ctx context.Context, e *CheckEnv) error {
			out, err := kubectlGet(ctx, e.Node, "get configmap -n kube-system bootstrap -o jsonpath={.data.status}")
			if err != nil {
				return err
			}
			if out != "complete" {
				return fmt.Errorf("kube-system/bootstrap status is %q, want complete (cluster-bootstrap writes it once the required pods run)", out)
			}
			return nil
		}}
}

// apiMastersReady checks the masters registered as Nodes and none is
// NotReady. By stage 14 cluster-bootstrap's required-pods wait has seen
// the masters' mirror pods, so they joined: their client CSRs approved by
// approve-csr on the bootstrap and signed by its controller manager (on a
// rehearsal lab too). It does not count them: the node has no spec.
func apiMastersReady() Check {
	return Check{Name: "kubectl get nodes: the masters registered, none NotReady", Live: true,
		Run: func(ctx context.Context, e *CheckEnv) error {
			out, err := kubectlGet(ctx, e.Node, `get nodes -l node-role.kubernetes.io/master -o 'jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{" "}{end}'`)
			if err != nil {
				return err
			}
			return mastersReady(out)
		}}
}

// mastersReady reads "name=True name=False " (kubectl's jsonpath above).
func mastersReady(out string) error {
	var notReady []string
	fields := strings.Fields(out)
	if len(fields) == 0 {
		return errors.New("no master registered as a Node: approve-csr on the bootstrap approves their client CSRs while the bootstrap's control plane runs; see `kubectl get csr` and approve pending ones (`bootlab lab approve-csrs`)")
	}
	for _, f := range fields {
		name, status, _ := strings.Cut(f, "=")
		if status != "True" {
			notReady = append(notReady, name)
		}
	}
	if len(notReady) > 0 {
		return fmt.Errorf("not Ready: %s", strings.Join(notReady, " "))
	}
	return nil
}
