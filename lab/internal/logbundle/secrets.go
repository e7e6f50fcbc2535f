package logbundle

import (
	"bytes"
	"encoding/base64"
	"path"
	"regexp"
	"strings"
)

// secretNames are the base names (lower case) of files that hold
// credentials: the installer's gather removes *secret*, *kubeconfig*,
// *.key and .kube from its rendered assets; bootlab adds tokens, pull
// secrets, passwords and SSH keys.
var secretNames = []struct {
	match func(string) bool
	why   string
}{
	{func(b string) bool { return strings.Contains(b, "secret") }, "its name says it is a secret"},
	{func(b string) bool { return strings.Contains(b, "kubeconfig") }, "a kubeconfig carries credentials"},
	{func(b string) bool { return strings.HasSuffix(b, ".key") }, "a private key"},
	{func(b string) bool { return strings.Contains(b, "token") }, "a token"},
	{func(b string) bool { return strings.Contains(b, "password") || strings.Contains(b, "passwd") }, "a password"},
	{func(b string) bool { return b == "auth.json" || b == ".dockercfg" || b == ".dockerconfigjson" }, "a registry's credentials"},
	{func(b string) bool { return strings.HasPrefix(b, "id_") && !strings.HasSuffix(b, ".pub") }, "an SSH private key"},
	{func(b string) bool { return strings.HasPrefix(b, "ssh_host_") && !strings.HasSuffix(b, ".pub") }, "an SSH host key"},
}

// secretDirs are directories whose every file is a credential: .kube (the
// installer's rule) and the installer's auth/ (kubeconfig, kubeadmin's password).
var secretDirs = map[string]bool{".kube": true, "auth": true, ".ssh": true, ".docker": true}

// refusedPath says why the file at rel is never put in a bundle, "" when
// its path is no reason to refuse it.
func refusedPath(rel string) string {
	for _, dir := range strings.Split(path.Dir(rel), "/") {
		if secretDirs[dir] {
			return "under " + dir + "/, which holds credentials"
		}
	}
	b := strings.ToLower(path.Base(rel))
	for _, s := range secretNames {
		if s.match(b) {
			return s.why
		}
	}
	return ""
}

var (
	// pemKey is a PEM private key block, of any kind (PKCS#8, RSA, EC,
	// OpenSSH); an unterminated one runs to the end.
	pemKey = regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)`)
	// pemBase64 starts a base64'd PEM block ("-----BEGIN"), as a Secret or
	// a kubeconfig's *-data field carries it.
	pemBase64 = regexp.MustCompile(`LS0tLS1CRUdJTi[A-Za-z0-9+/=]*`)
	// pullSecret is a registry auth file's (or a pull secret's) key.
	pullSecret = regexp.MustCompile(`"auths"\s*:\s*\{`)
	// kubeCreds are a kubeconfig's user credentials, in YAML or JSON.
	kubeCreds = regexp.MustCompile(`(?m)(^\s*(client-key-data|token|password)\s*:\s*\S)|("(client-key-data|token|password)"\s*:\s*"[^"])`)
	// secretKind is a Secret object, in YAML or JSON.
	secretKind = regexp.MustCompile(`(?m)(^kind:\s*Secret\s*$)|("kind"\s*:\s*"Secret")`)
	// jwt is a service account's (or any) JSON web token; bearer an
	// Authorization header's credential.
	jwt    = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+`)
	bearer = regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/-]{16,}=*`)
)

// Removed replaces what the filter takes out of a log.
const Removed = "[removed by bootlab gather]"

// isLog is true for the files whose lines are read one by one (journals,
// container logs, command outputs): their secrets are cut out and the rest
// kept; any other file holding one is left out whole.
func isLog(rel string) bool {
	return strings.HasSuffix(rel, ".log") || strings.HasSuffix(rel, ".txt")
}

// Filter is what of the file at rel may go in a bundle: data, with a log's
// private keys and tokens cut out; nil and why when the file must be left
// out whole (its path names a credential, or it holds a private key, a
// pull secret, a kubeconfig's credentials or a Secret object).
func Filter(rel string, data []byte) ([]byte, string) {
	if why := refusedPath(rel); why != "" {
		return nil, why
	}
	key := pemKey.Match(data) || base64Key(data)
	if !isLog(rel) {
		switch {
		case key:
			return nil, "it holds a private key"
		case pullSecret.Match(data):
			return nil, "it holds a registry's credentials (a pull secret)"
		case secretKind.Match(data):
			return nil, "it holds a Secret object"
		case kubeCreds.Match(data):
			return nil, "it holds a token, password or client key"
		}
		return redactTokens(data), ""
	}
	if key {
		data = pemKey.ReplaceAll(data, []byte(Removed))
		data = pemBase64.ReplaceAllFunc(data, func(m []byte) []byte {
			if decodedKey(m) {
				return []byte(Removed)
			}
			return m
		})
	}
	if pullSecret.Match(data) {
		data = redactLines(data, pullSecret)
	}
	return redactTokens(data), ""
}

// redactTokens cuts JSON web tokens and bearer credentials out of data.
func redactTokens(data []byte) []byte {
	if bytes.Contains(data, []byte("eyJ")) {
		data = jwt.ReplaceAll(data, []byte(Removed))
	}
	return bearer.ReplaceAll(data, []byte("${1}"+Removed))
}

// redactLines replaces every line that re matches.
func redactLines(data []byte, re *regexp.Regexp) []byte {
	lines := bytes.Split(data, []byte("\n"))
	for i, l := range lines {
		if re.Match(l) {
			lines[i] = []byte(Removed)
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// base64Key is true when data holds a base64'd PEM private key.
func base64Key(data []byte) bool {
	for _, m := range pemBase64.FindAll(data, -1) {
		if decodedKey(m) {
			return true
		}
	}
	return false
}

// decodedKey is true when the base64 run m decodes to a PEM private key
// (its head is enough: a run cut short still names its block).
func decodedKey(m []byte) bool {
	m = m[:len(m)/4*4]
	out := make([]byte, base64.StdEncoding.DecodedLen(len(m)))
	n, _ := base64.StdEncoding.Decode(out, m) // n counts what decoded before any error
	head := out[:n]
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	return bytes.Contains(head, []byte("PRIVATE KEY"))
}
