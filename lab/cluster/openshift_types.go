package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Condition is an OpenShift operator or ClusterVersion status condition
// (openshift/api is not a dependency: these few fields are all bootlab reads).
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// statusObject is any object whose status has conditions.
type statusObject struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Status struct {
		Conditions []Condition `json:"conditions"`
		Desired    struct {
			Version string `json:"version"`
		} `json:"desired"`
	} `json:"status"`
}

func (o statusObject) condition(t string) (Condition, bool) {
	for _, c := range o.Status.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return Condition{}, false
}

func (o statusObject) is(t, status string) bool {
	c, ok := o.condition(t)
	return ok && c.Status == status
}

// API paths of the OpenShift objects the waits read.
const (
	EtcdOperatorPath    = "/apis/operator.openshift.io/v1/etcds/cluster"
	ClusterVersionPath  = "/apis/config.openshift.io/v1/clusterversions/version"
	ClusterOperatorPath = "/apis/config.openshift.io/v1/clusteroperators"
	BootstrapCMPath     = "/api/v1/namespaces/kube-system/configmaps/bootstrap"
	EtcdEndpointsPath   = "/api/v1/namespaces/openshift-etcd/configmaps/etcd-endpoints"
	MasterNodesPath     = "/api/v1/nodes?labelSelector=node-role.kubernetes.io%2Fmaster"
	// EtcdBootstrapMemberRemoved is the etcd operator condition the installer waits for.
	EtcdBootstrapMemberRemoved = "EtcdBootstrapMemberRemoved"
)

// MCS is the Machine Config Server behind the load balancer on 22623,
// checked with the installer's root CA and the api-int name.
type MCS struct {
	URL  string
	HTTP *http.Client
}

// MCSPort is the MCS TLS port.
const MCSPort = 22623

// NewMCS returns an MCS client for https://api-int.<clusterDomain>:22623,
// trusting rootCAPEM (the CA in master.ign) and dialling via (an IP) when set.
func NewMCS(rootCAPEM []byte, clusterDomain, via string, dial DialFunc) (*MCS, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(rootCAPEM) {
		return nil, fmt.Errorf("the MCS root CA (master.ign certificateAuthorities) holds no PEM certificate")
	}
	host := "api-int." + clusterDomain
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12},
		DialContext:     DialVia(via, dial),
	}
	return &MCS{URL: fmt.Sprintf("https://%s:%d", host, MCSPort), HTTP: &http.Client{Transport: tr, Timeout: 20 * time.Second}}, nil
}

// Healthz is GET /healthz: nil on 200.
func (m *MCS) Healthz(ctx context.Context) error {
	code, err := m.get(ctx, "/healthz", "")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("MCS /healthz: HTTP %d", code)
	}
	return nil
}

// ConfigStatus is the HTTP status of GET /config/<pool> with the Ignition
// 3.2 Accept header: 200 from the in-cluster MCS, 500 from the bootstrap MCS
// for any pool but master.
func (m *MCS) ConfigStatus(ctx context.Context, pool string) (int, error) {
	return m.get(ctx, "/config/"+pool, "application/vnd.coreos.ignition+json;version=3.2.0, */*;q=0.1")
}

func (m *MCS) get(ctx context.Context, path, accept string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(m.URL, "/")+path, nil)
	if err != nil {
		return 0, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := m.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<20))
	resp.Body.Close()
	return resp.StatusCode, nil
}
