package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/ignition/v2/config/v3_2"
	"github.com/coreos/ignition/v2/config/v3_2/types"

	"github.com/bootlab/bootlab/internal/ignition"
)

// UserAgent is what the agent sends, shaped like Ignition's own.
const UserAgent = "Ignition/2.24.0 (bootlab-probe)"

// Fetcher follows pointer configs the way Ignition does: every
// ignition.config.merge[].source is fetched (https with only the config's
// certificateAuthorities trusted, or a data URL), retried until served,
// then merged over the parent config.
//
// The parent config's ignition.timeouts apply as in Ignition: httpTotal
// (seconds) bounds one source's attempts together, and without it (the
// installer's pointer configs set none) a source is retried for as long as
// ctx lasts, the way Ignition retries forever; httpResponseHeaders
// (default 10 s) bounds the wait for an answer's headers.
type Fetcher struct {
	// DialContext resolves and dials (through the lab's DNS in the agent).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// Retry is the wait between attempts (default 2s). Deadline, when set,
	// bounds one source's attempts as well (the shorter of it and the
	// config's httpTotal wins).
	Retry    time.Duration
	Deadline time.Duration
	// OnAttempt, when set, is told about every failed attempt.
	OnAttempt func(source string, attempt int, err error)
}

// Fetched is a successful fetch.
type Fetched struct {
	Source   string
	Attempts int
	Bytes    int
}

// Resolve returns cfg with every merge source fetched and merged, and what
// was fetched. Nested pointers are followed too.
func (f *Fetcher) Resolve(ctx context.Context, cfg types.Config) (types.Config, []Fetched, error) {
	return f.resolve(ctx, cfg, 0)
}

func (f *Fetcher) resolve(ctx context.Context, cfg types.Config, depth int) (types.Config, []Fetched, error) {
	if depth > 5 {
		return cfg, nil, errors.New("the ignition merge chain is deeper than 5")
	}
	if cfg.Ignition.Config.Replace.Source != nil {
		return cfg, nil, errors.New("ignition.config.replace is not supported by the probe agent")
	}
	merges := cfg.Ignition.Config.Merge
	if len(merges) == 0 {
		return cfg, nil, nil
	}
	pool, err := caPool(cfg.Ignition.Security.TLS.CertificateAuthorities)
	if err != nil {
		return cfg, nil, err
	}
	tm, err := timeoutsOf(cfg.Ignition.Timeouts)
	if err != nil {
		return cfg, nil, err
	}
	parent := cfg
	parent.Ignition.Config.Merge = nil
	var all []Fetched
	for _, m := range merges {
		if m.Source == nil {
			continue
		}
		data, fx, err := f.fetchRetry(ctx, *m.Source, pool, tm)
		if err != nil {
			return cfg, all, err
		}
		all = append(all, fx)
		child, rpt, err := v3_2.Parse(data)
		if err != nil {
			return cfg, all, fmt.Errorf("parse config from %s: %w: %s", *m.Source, err, rpt.String())
		}
		child, more, err := f.resolve(ctx, child, depth+1)
		all = append(all, more...)
		if err != nil {
			return cfg, all, err
		}
		parent = v3_2.Merge(parent, child)
	}
	return parent, all, nil
}

// timeouts are a config's ignition.timeouts: total 0 is no limit.
type timeouts struct {
	total, headers time.Duration
}

// Ignition's defaults (internal/resource/http.go): no limit on the total,
// 10 s for an answer's headers.
const defaultHeaderTimeout = 10 * time.Second

func timeoutsOf(t types.Timeouts) (timeouts, error) {
	tm := timeouts{headers: defaultHeaderTimeout}
	if v := t.HTTPTotal; v != nil {
		if *v < 0 {
			return tm, fmt.Errorf("ignition.timeouts.httpTotal is %d: seconds, 0 or more (0: no limit)", *v)
		}
		tm.total = time.Duration(*v) * time.Second
	}
	if v := t.HTTPResponseHeaders; v != nil {
		if *v < 0 {
			return tm, fmt.Errorf("ignition.timeouts.httpResponseHeaders is %d: seconds, 0 or more (0: no limit)", *v)
		}
		tm.headers = time.Duration(*v) * time.Second
	}
	return tm, nil
}

func caPool(cas []types.Resource) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	for i, ca := range cas {
		if ca.Source == nil {
			continue
		}
		if !strings.HasPrefix(*ca.Source, "data:") {
			return nil, fmt.Errorf("ignition.security.tls.certificateAuthorities[%d]: only data URLs are supported by the probe agent", i)
		}
		pem, err := ignition.DecodeDataURL(*ca.Source)
		if err != nil {
			return nil, fmt.Errorf("ignition.security.tls.certificateAuthorities[%d]: %w", i, err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ignition.security.tls.certificateAuthorities[%d]: no PEM certificate", i)
		}
	}
	return pool, nil
}

func (f *Fetcher) fetchRetry(ctx context.Context, source string, pool *x509.CertPool, tm timeouts) ([]byte, Fetched, error) {
	fx := Fetched{Source: source}
	if strings.HasPrefix(source, "data:") {
		data, err := ignition.DecodeDataURL(source)
		fx.Attempts, fx.Bytes = 1, len(data)
		return data, fx, err
	}
	retry := f.Retry
	if retry <= 0 {
		retry = 2 * time.Second
	}
	deadline, limit := tm.total, "ignition.timeouts.httpTotal: "+tm.total.String()
	if f.Deadline > 0 && (deadline == 0 || f.Deadline < deadline) {
		deadline, limit = f.Deadline, "in "+f.Deadline.String()
	}
	var ours error // the cause our deadline gives ctx
	if deadline > 0 {
		var cancel context.CancelFunc
		ours = errors.New(limit)
		ctx, cancel = context.WithTimeoutCause(ctx, deadline, ours)
		defer cancel()
	}
	client := f.client(pool, tm.headers)
	defer client.CloseIdleConnections()
	var last error
	// gaveUp is the error once ctx has ended, naming our limit when it was
	// what ended it (none when the caller's ctx did).
	gaveUp := func() error {
		why := ""
		if ours != nil && errors.Is(context.Cause(ctx), ours) {
			why = " (" + ours.Error() + ")"
		}
		return fmt.Errorf("GET %s: gave up after %d attempts%s: %w", source, fx.Attempts, why, last)
	}
	for {
		fx.Attempts++
		data, err := get(ctx, client, source)
		if err == nil {
			fx.Bytes = len(data)
			return data, fx, nil
		}
		if ctx.Err() != nil && last != nil {
			// the deadline cut this attempt: the previous error is the news.
			return nil, fx, gaveUp()
		}
		last = err
		if f.OnAttempt != nil {
			f.OnAttempt(source, fx.Attempts, err)
		}
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fx, gaveUp()
		case <-t.C:
		}
	}
}

func (f *Fetcher) client(pool *x509.CertPool, headers time.Duration) *http.Client {
	dial := f.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	return &http.Client{
		Timeout: attemptTimeout(headers),
		Transport: &http.Transport{
			DialContext:         dial,
			TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout: 10 * time.Second,
			// 0 (httpResponseHeaders: 0) is no limit, as in net/http.
			ResponseHeaderTimeout: headers,
			DisableKeepAlives:     true,
			ForceAttemptHTTP2:     false,
		},
	}
}

// attemptTimeout bounds one attempt whole (dial, handshake, headers and
// body): 30 s, or 20 s past a longer httpResponseHeaders, so that the
// config's wait is the one that ends it; none when the config sets no
// header limit, as in Ignition (whose client has no other bound).
func attemptTimeout(headers time.Duration) time.Duration {
	switch {
	case headers == 0:
		return 0
	case headers+20*time.Second > 30*time.Second:
		return headers + 20*time.Second
	}
	return 30 * time.Second
}

// StatusError is a non-200 answer.
type StatusError struct {
	Code int
	Body string
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("HTTP %d", e.Code)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body)
}

func get(ctx context.Context, c *http.Client, source string) ([]byte, error) {
	u, err := url.Parse(source)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("unsupported scheme %q in %s", u.Scheme, source)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, source, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", ignition.AcceptHeader)
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := c.Do(req)
	if err != nil {
		return nil, cleanErr(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{Code: resp.StatusCode, Body: strings.TrimSpace(string(body))}
	}
	return body, nil
}

// cleanErr drops the "Get "url": " prefix the URL already says.
func cleanErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
