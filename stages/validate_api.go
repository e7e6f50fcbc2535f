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
// returns its output, once the API answers at all (e.api).
func kubectlGet(ctx context.Context, e *CheckEnv, args string) (string, error) {
	if err := e.api.answers(ctx, e); err != nil {
		return "", fmt.Errorf("kubectl %s not asked: %w", args, err)
	}
	// sudo keeps the caller's PATH: kubectl is where a login finds it.
	cmd := `sudo -n env "PATH=$PATH" kubectl --kubeconfig=` + opt("auth/kubeconfig") + " --request-timeout=10s " + args
	out, err := node.Output(ctx, e.Node, cmd)
	if err != nil {
		return "", fmt.Errorf("kubectl %s on %s: %w", args, e.Node, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// apiGate is whether anything answers https on the API's name, asked once
// a pass (one curl) for every kubectl check of it. kubectl retries a GET
// that meets a closed connection ten times, a second apart, for each
// request it makes (discovery first): on an API not up yet, the load
// balancer with no server to send it to, each kubectl check took 20 to
// 30 s on a TCG node, and `stage validate --all` after stage 12 minutes.
// Only curl's "nothing answered" exits stop kubectl: any HTTP answer, or a
// node without curl, leaves the verdict to kubectl.
type apiGate struct {
	asked bool
	err   error
}

// curlNoAnswer are curl's exits for a server that did not answer: name
// not resolved, connection refused, timeout, TLS handshake cut, empty
// reply, connection reset.
var curlNoAnswer = map[int]string{6: "the name does not resolve", 7: "nothing listens", 28: "no answer in 10 s",
	35: "the TLS handshake was cut (as a load balancer does while no server is up)", 52: "an empty reply", 56: "the connection was reset"}

func (g *apiGate) answers(ctx context.Context, e *CheckEnv) error {
	if g == nil || e.Vars.APIURL == "" {
		return nil
	}
	if !g.asked {
		g.asked = true
		url := "https://" + e.Vars.APIURL + ":6443/readyz"
		var errb strings.Builder
		code, err := e.Node.Run(ctx, "curl --silent --show-error --insecure --max-time 10 --output /dev/null "+node.ShellQuote(url), nil, nil, &errb)
		switch why, none := curlNoAnswer[code]; {
		case err != nil:
			g.err = fmt.Errorf("GET %s from %s: %w", url, e.Node, err)
		case none:
			msg := strings.TrimPrefix(strings.TrimSpace(errb.String()), "curl: ")
			g.err = fmt.Errorf("GET %s from %s: %s (curl: %s)", url, e.Node, why, trim(msg, 160))
		}
	}
	return g.err
}

// apiReadyz checks the API answers /readyz "ok" to the admin.
func apiReadyz() Check {
	return Check{Name: "kubectl get --raw /readyz answers ok (the admin kubeconfig, through api)", Live: true,
		Run: func(ctx context.Context, e *CheckEnv) error {
			out, err := kubectlGet(ctx, e, "get --raw /readyz")
			if err != nil {
				return err
			}
			if out != "ok" {
				return fmt.Errorf("/readyz answered %q, want ok", trim(out, 120))
			}
			return nil
		}}
}

// apiBootstrapSuccessEvent checks cluster-bootstrap sent its
// bootstrap-success event (openshift/cluster-bootstrap pkg/start/start.go:
// once the required pods run and, on an HA control plane, the masters
// serve). kube-system/bootstrap is not stage 13's: progress.service
// creates it after stage 15.
func apiBootstrapSuccessEvent() Check {
	return Check{Name: "kubectl get event -n kube-system bootstrap-success exists", Live: true,
		Run: func(ctx context.Context, e *CheckEnv) error {
			out, err := kubectlGet(ctx, e, "get event -n kube-system bootstrap-success -o jsonpath={.message}")
			if err != nil {
				return fmt.Errorf("%w (cluster-bootstrap sends it once the required pods run)", err)
			}
			if out == "" {
				return errors.New("event kube-system/bootstrap-success has no message")
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
			out, err := kubectlGet(ctx, e, `get nodes -l node-role.kubernetes.io/master -o 'jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{" "}{end}'`)
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

// controlPlanePods are cluster-bootstrap's required pods the masters run:
// namespace and pod-name prefix, as --required-pods names them.
var controlPlanePods = [][2]string{
	{"openshift-kube-apiserver", "kube-apiserver"},
	{"openshift-kube-controller-manager", "kube-controller-manager"},
	{"openshift-kube-scheduler", "openshift-kube-scheduler"},
}

// apiControlPlanePodsReady checks each of the masters' control-plane pods
// has a Ready pod: cluster-bootstrap waited for them before it tore the
// temporary control plane down (on a rehearsal lab the masters' installer
// stand-ins write them and their kubelet stand-ins publish the mirror pods).
func apiControlPlanePodsReady() Check {
	return Check{Name: "kubectl get pods: a Ready kube-apiserver, kube-controller-manager and kube-scheduler pod", Live: true,
		Run: func(ctx context.Context, e *CheckEnv) error {
			var missing []string
			for _, p := range controlPlanePods {
				out, err := kubectlGet(ctx, e, "get pods -n "+p[0]+` -o 'jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{" "}{end}'`)
				if err != nil {
					return err
				}
				if !readyPodWithPrefix(out, p[1]) {
					missing = append(missing, p[0]+"/"+p[1])
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("no Ready pod for %s: the masters' installers write them once their kube-apiserver serves (`kubectl get pods -A -o wide`)", strings.Join(missing, ", "))
			}
			return nil
		}}
}

// readyPodWithPrefix reads "name=True name=False " and says whether a pod
// whose name starts with prefix is Ready.
func readyPodWithPrefix(out, prefix string) bool {
	for _, f := range strings.Fields(out) {
		name, status, _ := strings.Cut(f, "=")
		if strings.HasPrefix(name, prefix) && status == "True" {
			return true
		}
	}
	return false
}
