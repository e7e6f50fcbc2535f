package agent

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/coreos/ignition/v2/config/v3_2/types"

	"github.com/bootlab/bootlab/internal/agent/endpoints"
	"github.com/bootlab/bootlab/internal/ignition"
	"github.com/bootlab/bootlab/internal/wire"
)

// serveChecks names the servers a node runs: its role's (the bootstrap and
// masters serve the API and MCS stand-ins), then ingress on the nodes the
// lab routes 80 and 443 to (self.Ingress: the workers, or the masters of a
// lab without workers).
func serveChecks(self wire.NodeExpect) []string {
	var out []string
	switch self.Role {
	case wire.RoleBootstrap:
		out = []string{chkMCS, chkAPI}
	case wire.RoleMaster:
		out = []string{chkAPI, chkMCS}
	}
	if self.Ingress {
		out = append(out, chkIngressHTTP, chkIngressHTTPS)
	}
	return out
}

func (a *Agent) startServers(self wire.NodeExpect, cfg types.Config) {
	file := func(path string) []byte {
		data, _, _ := ignition.FileContents(cfg, path)
		return data
	}
	serveTLS := func(check string, port int, cert tls.Certificate, certErr error, h http.Handler) func() {
		if certErr != nil {
			a.rep.set(check, failed, "serving certificate: %v", certErr)
			return nil
		}
		tlsCfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
		return a.listen(check, port, tlsCfg, h)
	}
	var mcsCert tls.Certificate
	var mcsErr error
	if self.Role == wire.RoleBootstrap || self.Role == wire.RoleMaster {
		// The API and MCS stand-ins serve the lab's api-int certificate,
		// which the pointer configs' CA verifies.
		mcsCert, mcsErr = tls.X509KeyPair(file(wire.MCSCertPath), file(wire.MCSKeyPath))
	}
	switch self.Role {
	case wire.RoleBootstrap:
		mcs := &endpoints.MCS{Mode: endpoints.MCSBootstrap, Configs: map[string][]byte{"master": file(wire.MasterConfigPath)}, Log: a.log, Node: self.Name}
		mcs.OnServe = func(pool, remote string, code int) {
			served := mcs.Served()["master"]
			a.rep.set(chkMCS, passed, "bootstrap MCS (TLS, api-int cert); served /config/master to %d: %s", len(served), strings.Join(served, " "))
		}
		serveTLS(chkMCS, ignition.MCSPort, mcsCert, mcsErr, mcs)
		serveTLS(chkAPI, 6443, mcsCert, mcsErr, endpoints.APIHealth(self.Name))
	case wire.RoleMaster:
		if !a.rehearsalMasterAPI(cfg) {
			serveTLS(chkAPI, 6443, mcsCert, mcsErr, endpoints.APIHealth(self.Name))
		}
		mcs := &endpoints.MCS{Mode: endpoints.MCSCluster, Configs: map[string][]byte{"worker": file(wire.WorkerConfigPath)}, Log: a.log, Node: self.Name}
		mcs.OnServe = func(pool, remote string, code int) {
			served := mcs.Served()["worker"]
			a.rep.set(chkMCS, passed, "in-cluster MCS (TLS); served /config/worker to %d: %s", len(served), strings.Join(served, " "))
		}
		serveTLS(chkMCS, ignition.MCSPort, mcsCert, mcsErr, mcs)
	}
	if self.Ingress {
		cert, err := selfSigned(self.FQDN)
		a.listen(chkIngressHTTP, 80, nil, endpoints.IngressStandIn(self.Name))
		serveTLS(chkIngressHTTPS, 443, cert, err, endpoints.IngressStandIn(self.Name))
	}
}

// rehearsalMasterAPI reports on a rehearsal master's 6443 and returns
// true; false on any other master, which serves the health-only API
// stand-in the load balancer's checks and lab verify read. A rehearsal
// master leaves 6443 closed, as a real master does until the
// kube-apiserver operator's installer gives it a kube-apiserver: its
// installer stand-in does (operators/installer). A stand-in here would pass
// haproxy's /readyz check and take api and api-int traffic from the
// bootstrap's real API (measured on VMs: the installers read their
// secrets from each other's stand-ins and never installed).
func (a *Agent) rehearsalMasterAPI(cfg types.Config) bool {
	if a.etcd == nil {
		return false
	}
	if _, ok, _ := ignition.FileContents(cfg, wire.KASOperatorKubeconfigPath); !ok {
		a.rep.set(chkAPI, failed, "this rehearsal master's served config has no %s, so no kube-apiserver installer runs here: its Ignition is older than its agent; rebuild the lab (bootlab lab down, then bootlab lab up --manual-bootstrap)", wire.KASOperatorKubeconfigPath)
		return true
	}
	a.rep.set(chkAPI, retrying, "nothing on :6443 yet, as on a real master: the kube-apiserver installer stand-in gives this master the release's kube-apiserver once its etcd member votes and stage 13 created the objects it copies")
	return true
}

// listen serves h on port and returns the function that stops it (nil
// when it could not listen).
func (a *Agent) listen(check string, port int, tlsCfg *tls.Config, h http.Handler) func() {
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		a.rep.set(check, failed, "listen: %v", err)
		return nil
	}
	kind := "HTTP"
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
		kind = "TLS"
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(a.log.Handler(), slog.LevelDebug)}
	go func() { _ = srv.Serve(ln) }()
	a.rep.set(check, passed, "listening on :%d (%s)", port, kind)
	return func() { _ = srv.Close() }
}

// selfSigned makes an ephemeral certificate for the ingress stand-in's 443
// (routers serve their own default certificate; nothing verifies it in the
// lab).
func selfSigned(name string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * 365 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
