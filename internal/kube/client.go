package kube

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Client speaks JSON to a Kubernetes API.
type Client struct {
	server string
	http   *http.Client
}

// NewClient checks cfg and makes a client for it.
func NewClient(cfg Config) (*Client, error) {
	h, err := NewHTTPClient(cfg)
	if err != nil {
		return nil, err
	}
	return New(cfg.Server, h), nil
}

// New is a client of the API at server over h, an HTTP client made by
// NewHTTPClient (or a test server's).
func New(server string, h *http.Client) *Client {
	return &Client{server: strings.TrimSuffix(server, "/"), http: h}
}

// NewHTTPClient is the HTTP client of cfg: TLS verified against its CA (the
// system's roots when it names none), its client certificate or bearer
// token, its dialer.
func NewHTTPClient(cfg Config) (*http.Client, error) {
	tlsCfg := &tls.Config{ServerName: cfg.ServerName, MinVersion: tls.VersionTLS12}
	if len(cfg.CAPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CAPEM) {
			return nil, errors.New("client: no PEM certificate in the certificate authority (certificate-authority-data of the kubeconfig)")
		}
		tlsCfg.RootCAs = pool
	}
	if len(cfg.CertPEM) > 0 || len(cfg.KeyPEM) > 0 || cfg.Token == "" {
		cert, err := tls.X509KeyPair(cfg.CertPEM, cfg.KeyPEM)
		if err != nil {
			return nil, fmt.Errorf("client: the client certificate and key do not make a pair: %w", err)
		}
		tlsCfg.Certificates = []tls.Certificate{cert}
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg, DialContext: cfg.Dial,
		TLSHandshakeTimeout: cfg.HandshakeTimeout, ForceAttemptHTTP2: cfg.HTTP2}
	var rt http.RoundTripper = tr
	if cfg.Token != "" {
		rt = bearer{token: cfg.Token, rt: tr}
	}
	return &http.Client{Transport: rt, Timeout: 30 * time.Second}, nil
}

// bearer authenticates each request with a token.
type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

// Server is the API's URL.
func (c *Client) Server() string { return c.server }

// APIError is an answer of the API other than 2xx.
type APIError struct {
	Method, Path string
	Code         int
	// Reason is the Status reason: AlreadyExists, NotFound, Invalid...
	Reason  metav1.StatusReason
	Message string
}

func (e *APIError) Error() string {
	msg := e.Message
	if e.Reason != "" {
		msg = string(e.Reason) + ": " + msg
	}
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Code, msg)
}

// IsNotFound is true for a 404 answer.
func IsNotFound(err error) bool { return HasCode(err, http.StatusNotFound) }

// IsAlreadyExists is true when a create found the object there.
func IsAlreadyExists(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Code == http.StatusConflict && e.Reason == metav1.StatusReasonAlreadyExists
}

// HasCode is true when err is an answer of the API with status code.
func HasCode(err error, code int) bool {
	var e *APIError
	return errors.As(err, &e) && e.Code == code
}

// maxBody bounds an answer read: a discovery document is tens of KiB, a
// list of a cluster's objects some MiB.
const maxBody = 32 << 20

// Do sends body (JSON, when not nil) and decodes the JSON answer into out
// (when not nil; a *string takes the answer as it is). A non-2xx answer is
// an *APIError.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	return c.send(ctx, method, path, "application/json", body, out)
}

// Patch sends a JSON merge patch (RFC 7386) to path, as kubectl patch
// --type=merge does: the way to change a status without reading it first.
func (c *Client) Patch(ctx context.Context, path string, patch, out any) error {
	return c.send(ctx, http.MethodPatch, path, "application/merge-patch+json", patch, out)
}

func (c *Client) send(ctx context.Context, method, path, contentType string, body, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.server+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &APIError{Method: method, Path: path, Code: resp.StatusCode}
		var st metav1.Status
		if json.Unmarshal(data, &st) == nil && st.Kind == "Status" {
			e.Reason, e.Message = st.Reason, st.Message
		} else {
			e.Message = strings.TrimSpace(string(data))
		}
		return e
	}
	if raw, ok := out.(*string); ok {
		*raw = string(data)
		return nil
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: the answer is not the JSON expected: %w", method, path, err)
		}
	}
	return nil
}

// Ready asks /readyz; nil means the API answered ok.
func (c *Client) Ready(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.server+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
		return fmt.Errorf("GET %s/readyz: %s %s", c.server, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// WaitReady polls /readyz every interval until it answers ok or ctx ends,
// returning the last reason then.
func (c *Client) WaitReady(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		err := c.Ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the API at %s is not ready: %w", c.server, err)
		case <-t.C:
		}
	}
}
