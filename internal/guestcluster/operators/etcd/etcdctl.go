package etcd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/rhcos"
	"github.com/bootlab/bootlab/internal/wire"
)

// Etcdctl asks a member of the node's etcd with the node's client
// certificate: the changes by running the node's real etcdctl, the reads
// the stand-ins repeat over etcd's v3 JSON API in process (etcdapi.go).
type Etcdctl struct {
	bin               string
	endpoints         []string
	cacert, cert, key string
	// api is the HTTP client of the reads, shared by the copies.
	api *etcdHTTP
}

// MasterEtcdctl is a master's etcdctl with the node's client certificate.
func MasterEtcdctl(endpoints ...string) Etcdctl {
	return Etcdctl{bin: "etcdctl", endpoints: endpoints, cacert: wire.EtcdCABundle, cert: wire.EtcdClientCert, key: wire.EtcdClientKey, api: newEtcdHTTP()}
}

// run runs etcdctl with args: a change to the cluster.
func (c Etcdctl) run(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	argv := []string{"--endpoints=" + strings.Join(c.endpoints, ",")}
	for _, f := range [][2]string{{"--cacert=", c.cacert}, {"--cert=", c.cert}, {"--key=", c.key}} {
		if f[1] != "" { // empty: plain http, as tests run etcd on loopback
			argv = append(argv, f[0]+f[1])
		}
	}
	argv = append(append(argv, "--dial-timeout=3s", "--command-timeout=5s"), args...)
	cmd := exec.CommandContext(ctx, c.bin, argv...)
	cmd.Env = []string{"ETCDCTL_API=3", "PATH=" + rhcos.DefaultPath}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("etcdctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// Member is a member as etcd's v3 JSON API lists it (the IDs, uint64,
// as strings: protobuf's JSON mapping).
type Member struct {
	ID         uint64   `json:"ID,string"`
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
	IsLearner  bool     `json:"isLearner"`
}

func (m Member) hexID() string { return fmt.Sprintf("%x", m.ID) }

// Members lists the cluster's members.
func (c Etcdctl) Members(ctx context.Context) ([]Member, error) {
	out, err := c.memberListJSON(ctx)
	if err != nil {
		return nil, err
	}
	var l struct {
		Members []Member `json:"members"`
	}
	if err := json.Unmarshal(out, &l); err != nil {
		return nil, fmt.Errorf("etcd member list: %w", err)
	}
	return l.Members, nil
}

// MemberSummary is "etcd-bootstrap, master-0 (learner), ..." for reports.
func MemberSummary(ms []Member) string {
	var parts []string
	for _, m := range ms {
		n := m.Name
		if n == "" {
			n = "(unstarted " + strings.Join(m.PeerURLs, ",") + ")"
		}
		if m.IsLearner {
			n += " (learner)"
		}
		parts = append(parts, n)
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d: %s", len(ms), strings.Join(parts, ", "))
}

// BootstrapEtcdctl is the bootstrap's etcdctl with the client certificate
// the installer puts in assets/tls.
func BootstrapEtcdctl(assets string) Etcdctl {
	return Etcdctl{bin: "etcdctl", endpoints: []string{"https://localhost:2379"}, cacert: filepath.Join(assets, "tls", "etcd-ca-bundle.crt"),
		cert: filepath.Join(assets, "tls", "etcd-client.crt"), key: filepath.Join(assets, "tls", "etcd-client.key"), api: newEtcdHTTP()}
}
