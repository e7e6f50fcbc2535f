package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/kube"
)

// Client is the host's client of a lab's API: internal/kube's requests
// over HTTP, the transport NewClient makes from a kubeconfig (tests give
// an httptest server's).
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
	h, err := kube.NewHTTPClient(k.config(DialVia(via, dial)))
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", k.Path, err)
	}
	return &Client{Server: strings.TrimSuffix(k.Server, "/"), HTTP: h}, nil
}

// do is internal/kube's request over c.HTTP, its answers' errors as the
// host's commands print them: an *APIError (the message cut to 300
// bytes), or the transport's error as it is.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	err := kube.New(c.Server, c.HTTP).Do(ctx, method, path, in, out)
	var ae *kube.APIError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		msg := ae.Message
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		return &APIError{Method: method, Path: path, Code: ae.Code, Message: msg}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue
	}
	return err
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
