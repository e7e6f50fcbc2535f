package etcd

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// The reads the stand-ins repeat (the member list, a member's status and
// health, one key) go to etcd's own v3 API as JSON over HTTPS, the gateway
// every etcd serves on its client port, from the agent's process on a
// connection kept open between polls. An etcdctl run for each cost a TCG
// node 0.2 to 0.3 s of its vCPU (a process, a TLS handshake, gRPC); the
// masters and the bootstrap polled every few seconds through stage 13.
// The changes (member add, promote, remove; put) stay etcdctl runs, one
// each, as a learner reads them in the node's log.

// etcdCall bounds one read, as etcdctl's --dial-timeout=3s and
// --command-timeout=5s do.
const (
	etcdDialTimeout = 3 * time.Second
	etcdCallTimeout = 5 * time.Second
)

// etcdHTTP is the HTTP client the copies of one Etcdctl share, made on the
// first read: the client certificate lands with the Ignition files after
// the Etcdctl is made, and a read before then fails and tries again.
type etcdHTTP struct {
	mu     sync.Mutex
	client *http.Client
	// dial replaces the network's (tests: every endpoint is one server).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

func newEtcdHTTP() *etcdHTTP { return &etcdHTTP{} }

// httpClient returns the shared client, made now if need be; an Etcdctl
// without one gets a client of its own that keeps no connection.
func (c Etcdctl) httpClient() (*http.Client, error) {
	h, keep := c.api, true
	if h == nil {
		h, keep = newEtcdHTTP(), false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client != nil {
		return h.client, nil
	}
	dial := h.dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: etcdDialTimeout}).DialContext
	}
	tr := &http.Transport{DialContext: dial, TLSHandshakeTimeout: etcdDialTimeout, MaxIdleConnsPerHost: 2, IdleConnTimeout: 5 * time.Minute, DisableKeepAlives: !keep}
	if c.cacert != "" {
		cfg, err := etcdTLS(c.cacert, c.cert, c.key)
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = cfg
	}
	h.client = &http.Client{Transport: tr}
	return h.client, nil
}

// etcdTLS trusts the CA bundle and presents the client certificate.
func etcdTLS(cacert, cert, key string) (*tls.Config, error) {
	pem, err := os.ReadFile(cacert)
	if err != nil {
		return nil, fmt.Errorf("etcd CA bundle: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("etcd CA bundle %s: no certificate in it", cacert)
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("etcd client certificate: %w", err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// call sends one read to the first of the endpoints that answers it: POST
// path with the JSON request, or GET when req is nil. what names the read
// in errors (etcdctl's command for it).
func (c Etcdctl) call(ctx context.Context, endpoints []string, what, path string, req any) ([]byte, error) {
	client, err := c.httpClient()
	if err != nil {
		return nil, fmt.Errorf("etcd %s: %w", what, err)
	}
	var errs []string
	for _, ep := range endpoints {
		out, err := callOne(ctx, client, strings.TrimSuffix(ep, "/")+path, req)
		if err == nil {
			return out, nil
		}
		errs = append(errs, ep+": "+err.Error())
	}
	if len(errs) == 0 {
		errs = append(errs, "no endpoint")
	}
	return nil, fmt.Errorf("etcd %s: %s", what, strings.Join(errs, "; "))
}

func callOne(ctx context.Context, client *http.Client, url string, req any) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, etcdCallTimeout)
	defer cancel()
	method, body := http.MethodGet, io.Reader(nil)
	if req != nil {
		b, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		method, body = http.MethodPost, bytes.NewReader(b)
	}
	r, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	r.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, etcdErrorMessage(out))
	}
	return out, nil
}

// etcdErrorMessage is the message of the gateway's error body (the gRPC
// status etcd returned), or the body itself.
func etcdErrorMessage(body []byte) string {
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
		Reason  string `json:"reason"`
	}
	if json.Unmarshal(body, &e) == nil {
		for _, s := range []string{e.Message, e.Error, e.Reason} {
			if s != "" {
				return s
			}
		}
	}
	return truncate(strings.TrimSpace(string(body)), 200)
}

// memberListJSON is the member list as etcd's JSON API returns it
// (etcdctl member list asks the same, linearizable: a learner refuses it).
func (c Etcdctl) memberListJSON(ctx context.Context) ([]byte, error) {
	return c.call(ctx, c.endpoints, "member list", "/v3/cluster/member/list", map[string]bool{"linearizable": true})
}

// statusJSON is the status of the first endpoint that answers (etcdctl
// endpoint status): it names the leader.
func (c Etcdctl) statusJSON(ctx context.Context) ([]byte, error) {
	return c.call(ctx, c.endpoints, "endpoint status", "/v3/maintenance/status", struct{}{})
}

// rangeSerializable reads one key from the member asked, without a round
// of the others (etcdctl get --consistency=s): its value, nil when absent.
func (c Etcdctl) rangeSerializable(ctx context.Context, key string) ([]byte, error) {
	out, err := c.call(ctx, c.endpoints, "get "+key, "/v3/kv/range",
		map[string]any{"key": base64.StdEncoding.EncodeToString([]byte(key)), "serializable": true})
	if err != nil {
		return nil, err
	}
	return etcdValue(out)
}

// healthy reports whether every endpoint answers etcd's /health (no
// alarm, a leader, a linearizable read: what etcdctl endpoint health
// checks), and if not which did not.
func (c Etcdctl) healthy(ctx context.Context, endpoints []string) (bool, string) {
	if len(endpoints) == 0 {
		return false, "no endpoint to check"
	}
	var bad []string
	for _, ep := range endpoints {
		out, err := c.call(ctx, []string{ep}, "endpoint health", "/health", nil)
		if err == nil {
			var h struct {
				Health string `json:"health"`
				Reason string `json:"reason"`
			}
			if err = json.Unmarshal(out, &h); err == nil && h.Health != "true" {
				err = fmt.Errorf("%s is unhealthy: %s", ep, h.Reason)
			}
		}
		if err != nil {
			bad = append(bad, err.Error())
		}
	}
	if len(bad) > 0 {
		return false, strings.Join(bad, "; ")
	}
	return true, ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
