package kube

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"time"
)

// Probe asks an API server's health endpoints (/readyz) as a load
// balancer's check and cluster-bootstrap do: anonymous, the serving
// certificate not verified, since it asks whether a process is ready, not
// who it is. One Probe keeps its connections between asks.
type Probe struct {
	http *http.Client
}

// NewProbe is a Probe whose asks each take timeout at most.
func NewProbe(timeout time.Duration) *Probe {
	return &Probe{http: &http.Client{Timeout: timeout, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a health probe, as cluster-bootstrap's
	}}}
}

// Answer is a health endpoint's answer: its status and the start of its
// body.
type Answer struct {
	// Code is the HTTP status code, Status its line ("503 Service Unavailable").
	Code   int
	Status string
	Body   []byte
}

// Get asks url and reads up to limit bytes of the answer.
func (p *Probe) Get(ctx context.Context, url string, limit int64) (Answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Answer{}, err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, limit))
	return Answer{Code: resp.StatusCode, Status: resp.Status, Body: body}, nil
}
