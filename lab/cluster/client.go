package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client is a minimal Kubernetes API client over net/http.
type Client struct {
	Server string
	HTTP   *http.Client
}

// APIError is a non-2xx answer of the API server.
type APIError struct {
	Method, Path string
	Code         int
	Message      string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.Path, e.Code, e.Message)
}

// IsNotFound reports whether err is an HTTP 404 from the API.
func IsNotFound(err error) bool {
	e, ok := err.(*APIError)
	return ok && e.Code == http.StatusNotFound
}

// DialVia returns a DialContext that connects to via (an IP) on the
// requested port whatever host name was asked: TLS still checks the name,
// so the lab's API is reached through its load balancer even before the
// host resolves the lab's domain. dial opens the connection (nil: directly,
// 10s at most; a remote hypervisor's tunnel for a lab behind it).
func DialVia(via string, dial DialFunc) DialFunc {
	if dial == nil {
		dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	if via == "" {
		return dial
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		return dial(ctx, network, net.JoinHostPort(via, port))
	}
}

// DialFunc opens a connection, like net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// NewClient builds a client of the kubeconfig's server, dialling via (an
// IP, e.g. the lab's API address) when not empty, with dial (nil: directly).
func NewClient(k *Kubeconfig, via string, dial DialFunc) (*Client, error) {
	tlsCfg, err := k.TLSConfig()
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		TLSClientConfig:     tlsCfg,
		DialContext:         DialVia(via, dial),
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	c := &Client{Server: strings.TrimSuffix(k.Server, "/"), HTTP: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
	if k.Token != "" {
		c.HTTP.Transport = bearer{token: k.Token, rt: tr}
	}
	return c, nil
}

type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Server+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(data))
		var st struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &st) == nil && st.Message != "" {
			msg = st.Message
		}
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		return &APIError{Method: method, Path: path, Code: resp.StatusCode, Message: msg}
	}
	if out == nil {
		return nil
	}
	if s, ok := out.(*string); ok {
		*s = string(data)
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode: %w", method, path, err)
	}
	return nil
}

// Get decodes the JSON at path into out (*string takes the raw body).
func (c *Client) Get(ctx context.Context, path string, out any) error {
	return c.do(ctx, http.MethodGet, path, nil, out)
}

// Put sends in as JSON to path and decodes the answer into out.
func (c *Client) Put(ctx context.Context, path string, in, out any) error {
	return c.do(ctx, http.MethodPut, path, in, out)
}

// Readyz is GET /readyz: nil when the API server says "ok".
func (c *Client) Readyz(ctx context.Context) error {
	var s string
	if err := c.Get(ctx, "/readyz", &s); err != nil {
		return err
	}
	if strings.TrimSpace(s) != "ok" {
		return fmt.Errorf("/readyz: %q", s)
	}
	return nil
}

// Version is GET /version's gitVersion ("v1.32.5").
func (c *Client) Version(ctx context.Context) (string, error) {
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := c.Get(ctx, "/version", &v); err != nil {
		return "", err
	}
	return v.GitVersion, nil
}

// Host is the server's host name (api.<cluster>.<domain>).
func (c *Client) Host() string {
	u, err := url.Parse(c.Server)
	if err != nil {
		return c.Server
	}
	return u.Hostname()
}
