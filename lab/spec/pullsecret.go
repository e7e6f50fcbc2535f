package spec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// PullSecretHelp says where a pull secret comes from.
const PullSecretHelp = "download it from https://console.redhat.com/openshift/install/pull-secret and set openshift.pullSecretFile (or --pull-secret) to the file"

// CheckPullSecret checks a pull secret the way openshift-install checks
// install-config pullSecret (installer pkg/validate ImagePullSecret): JSON
// with a non-empty "auths" object whose every registry has "auth" or
// "credsStore". An "auth" must also be base64 of user:password, or every
// pull from that registry fails later, on the nodes. It returns the secret
// as compact JSON, the form install-config takes. Errors never quote it.
func CheckPullSecret(data []byte) (string, error) {
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return "", fmt.Errorf("is not valid JSON (syntax error at byte %d): copy it again, whole", se.Offset)
		}
		return "", errors.New("is not valid JSON (truncated?): copy it again, whole")
	}
	var ps struct {
		Auths map[string]map[string]json.RawMessage `json:"auths"`
	}
	if err := json.Unmarshal(data, &ps); err != nil {
		return "", errors.New("is not a JSON object with \"auths\"")
	}
	if len(ps.Auths) == 0 {
		return "", errors.New("has no \"auths\" entries")
	}
	regs := make([]string, 0, len(ps.Auths))
	for r := range ps.Auths {
		regs = append(regs, r)
	}
	sort.Strings(regs)
	for _, r := range regs {
		entry := ps.Auths[r]
		raw, hasAuth := entry["auth"]
		_, hasStore := entry["credsStore"]
		switch {
		case hasAuth:
			var auth string
			if err := json.Unmarshal(raw, &auth); err != nil {
				return "", fmt.Errorf("auths[%q].auth is not a string", r)
			}
			dec, err := base64.StdEncoding.DecodeString(auth)
			if err != nil {
				return "", fmt.Errorf("auths[%q].auth is not base64", r)
			}
			user, pass, ok := strings.Cut(string(dec), ":")
			if !ok || user == "" || pass == "" {
				return "", fmt.Errorf("auths[%q].auth does not decode to \"user:password\"", r)
			}
		case hasStore:
		default:
			// username/password alone pass docker login but not the installer.
			return "", fmt.Errorf("auths[%q] has neither \"auth\" nor \"credsStore\", one of which openshift-install requires (\"auth\" is base64 of user:password)", r)
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		return "", errors.New("is not valid JSON")
	}
	return compact.String(), nil
}
