package stages

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/bootlab/bootlab/internal/node"
)

// cert checks a PEM certificate (bundle) is present and every certificate
// in it is valid now.
func cert(p string) Check {
	return Check{Name: "certificate " + p, Reads: []string{p}, Run: func(ctx context.Context, e *CheckEnv) error {
		data, err := readFile(ctx, e.Node, p)
		if err != nil {
			return err
		}
		n := 0
		for {
			var b *pem.Block
			b, data = pem.Decode(data)
			if b == nil {
				break
			}
			if b.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return fmt.Errorf("%s: certificate %d does not parse: %v", p, n+1, err)
			}
			n++
			if e.Now.After(c.NotAfter) {
				return fmt.Errorf("%s: certificate %q expired at %s: the installer's certificates live 24h for the bootstrap (regenerate the assets with `bootlab lab up`)", p, c.Subject.CommonName, c.NotAfter.UTC().Format(time.RFC3339))
			}
			if e.Now.Before(c.NotBefore) {
				return fmt.Errorf("%s: certificate %q is not valid before %s: is the node's clock right?", p, c.Subject.CommonName, c.NotBefore.UTC().Format(time.RFC3339))
			}
		}
		if n == 0 {
			return fmt.Errorf("%s holds no PEM certificate", p)
		}
		return nil
	}}
}

// key checks a PEM private key with mode 0600.
func key(p string) Check {
	return Check{Name: fmt.Sprintf("private key %s (mode 0600)", p), Reads: []string{p}, Run: func(ctx context.Context, e *CheckEnv) error {
		if err := file(p, 0o600).Run(ctx, e); err != nil {
			return err
		}
		data, err := readFile(ctx, e.Node, p)
		if err != nil {
			return err
		}
		b, _ := pem.Decode(data)
		if b == nil || !strings.Contains(b.Type, "PRIVATE KEY") {
			return fmt.Errorf("%s holds no PEM private key", p)
		}
		return nil
	}}
}

// envFile checks a KEY=value file sets every key to something.
func envFile(p string, keys ...string) Check {
	return Check{Name: "settings in " + p, Reads: []string{p}, Run: func(ctx context.Context, e *CheckEnv) error {
		data, err := readFile(ctx, e.Node, p)
		if err != nil {
			return err
		}
		have := map[string]string{}
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok {
				have[k] = strings.Trim(v, `'"`)
			}
		}
		for _, k := range keys {
			if have[k] == "" {
				return fmt.Errorf("%s does not set %s: rerun stage 02 (`bootlab stage run 02`)", p, k)
			}
		}
		return nil
	}}
}

// featureGates checks api-bootstrap resolved the gates in 99_feature-gate.yaml.
func featureGates(p string) Check {
	return Check{Name: "feature gates resolved in " + p, Reads: []string{p}, Run: func(ctx context.Context, e *CheckEnv) error {
		data, err := readFile(ctx, e.Node, p)
		if err != nil {
			return err
		}
		var fg struct {
			Kind   string `json:"kind"`
			Status struct {
				FeatureGates []struct {
					Version string `json:"version"`
				} `json:"featureGates"`
			} `json:"status"`
		}
		if err := yaml.Unmarshal(data, &fg); err != nil {
			return fmt.Errorf("%s does not parse: %v", p, err)
		}
		if fg.Kind != "FeatureGate" {
			return fmt.Errorf("%s is a %q, want a FeatureGate", p, fg.Kind)
		}
		if len(fg.Status.FeatureGates) == 0 {
			return fmt.Errorf("%s has no status.featureGates: api-bootstrap did not resolve the gates for this payload", p)
		}
		return nil
	}}
}

// https asks url from the node with curl and wants HTTP 200 and, when
// given, a body containing want.
func https(name, url, want string, curlArgs ...string) Check {
	return Check{Name: name, Live: true, Run: func(ctx context.Context, e *CheckEnv) error {
		u := url
		u = strings.ReplaceAll(u, "$API_URL", e.Vars.APIURL)
		u = strings.ReplaceAll(u, "$API_INT_URL", e.Vars.APIIntURL)
		args := append([]string{"curl", "--silent", "--show-error", "--max-time", "10", "--write-out", `'\n%{http_code}'`}, curlArgs...)
		cmd := strings.Join(args, " ") + " " + node.ShellQuote(u)
		out, err := node.Output(ctx, e.Node, cmd)
		if err != nil {
			return fmt.Errorf("GET %s from %s: %w", u, e.Node, err)
		}
		body, codeStr := "", strings.TrimSpace(string(out))
		if i := strings.LastIndexByte(codeStr, '\n'); i >= 0 {
			body, codeStr = codeStr[:i], codeStr[i+1:]
		}
		code, _ := strconv.Atoi(codeStr)
		if code != 200 {
			return fmt.Errorf("GET %s answered HTTP %s, want 200 (body %q)", u, codeStr, trim(body, 120))
		}
		if want != "" && !strings.Contains(body, want) {
			return fmt.Errorf("GET %s answered %q, want %q", u, trim(body, 120), want)
		}
		return nil
	}}
}
