package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/bootlab/bootlab/internal/sshc"
	"github.com/bootlab/bootlab/lab/cluster"
	"github.com/bootlab/bootlab/lab/host"
	"github.com/bootlab/bootlab/lab/internal/engine"
	"github.com/bootlab/bootlab/lab/loadbalancer"
	"github.com/bootlab/bootlab/lab/spec"
)

// GatherOptions tune Gather.
type GatherOptions struct {
	// Dir is where the bundle goes ("": the lab directory's gather/; for an
	// OpenShift lab, the installer's assets directory).
	Dir string
}

// Gather is `lab gather`: the bootstrap's logs in a log bundle
// (log-bundle-<id>.tar.gz), whose path it returns. On an OpenShift lab it
// runs openshift-install gather bootstrap; on a probe or rehearsal lab it
// writes bootlab's bundle in the installer's layout over the lab's one SSH
// path (DialNode), with the API's objects where it answers, the load
// balancer's state, the last verify and each node's clock (see
// engine.Gather). A progress line per node goes to the lab's status.
func (l *Lab) Gather(ctx context.Context, o GatherOptions) (string, error) {
	st, err := l.recorded()
	if err != nil {
		return "", err
	}
	eo := engine.GatherOptions{Log: l.o.Log, Status: l.o.Status, Dir: o.Dir}
	if l.spec.Profile == spec.ProfileOpenShift {
		bundle, err := engine.Gather(ctx, l.spec, st, eo)
		if err != nil || o.Dir == "" {
			return bundle, err
		}
		moved := filepath.Join(o.Dir, filepath.Base(bundle))
		if err := os.Rename(bundle, moved); err != nil {
			return bundle, fmt.Errorf("move the bundle to --dir: %w (it is at %s)", err, bundle)
		}
		return moved, nil
	}
	n, done, err := l.labNet(ctx, l.spec)
	if err != nil {
		return "", err
	}
	defer done()
	eo.Sources = l.gatherSources(n)
	return engine.Gather(ctx, l.spec, st, eo)
}

// gatherSources are where bootlab's bundle of the lab comes from.
func (l *Lab) gatherSources(n cluster.Net) engine.GatherSources {
	s := l.spec
	src := engine.GatherSources{
		Dial: func(ctx context.Context, node spec.Node) (engine.GatherNode, func(), error) {
			c, done, err := l.DialNode(ctx, node, DialOptions{})
			if err != nil {
				return nil, nil, err
			}
			return sshNode{c}, done, nil
		},
		LoadBalancer: func(ctx context.Context) (*loadbalancer.Status, error) {
			hv, err := l.hypervisor(ctx)
			if err != nil {
				return nil, err
			}
			ls, err := engine.Inspect(ctx, hv, s)
			switch {
			case err != nil:
				return nil, err
			case ls.LoadBalancer == nil && ls.LoadBalancerError != "":
				return nil, errors.New(ls.LoadBalancerError)
			case ls.LoadBalancer == nil:
				return nil, errors.New("the hypervisor's host network is not this machine's: haproxy cannot be inspected")
			}
			return ls.LoadBalancer, nil
		},
		Console: func(ctx context.Context, node spec.Node, w io.Writer) error {
			var h host.Host
			if s.Remote() {
				hv, err := l.hypervisor(ctx)
				if err != nil {
					return err
				}
				h = hv.Host()
			}
			return engine.Console(ctx, h, s, node, w, engine.ConsoleOptions{Raw: true})
		},
	}
	if v, err := l.LastVerify(); err == nil && v != nil {
		src.Verify = &v.VerifyRecord
	}
	if s.Rehearsal() {
		src.API = func(ctx context.Context) (engine.GatherAPI, error) {
			k, err := cluster.AdminKubeconfig(ctx, s, n)
			if err != nil {
				return nil, err
			}
			return cluster.NewClient(k, s.Network.APIAddress, n.Dial)
		}
	}
	return src
}

// sshNode runs a gather's commands over a node's SSH client.
type sshNode struct{ c *sshc.Client }

func (s sshNode) Run(ctx context.Context, cmd string, stdout io.Writer) (int, string, error) {
	var stderr bytes.Buffer
	code, err := s.c.Stream(ctx, cmd, nil, stdout, &limited{w: &stderr, n: 4096})
	return code, stderr.String(), err
}

// limited writes at most n bytes to w and drops the rest.
type limited struct {
	w io.Writer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if k := min(len(p), l.n); k > 0 {
		_, _ = l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
