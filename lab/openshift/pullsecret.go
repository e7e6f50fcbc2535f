package openshift

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
)

// PullSecretHelp says where a pull secret comes from.
const PullSecretHelp = "download it from https://console.redhat.com/openshift/install/pull-secret and set openshift.pullSecretFile (or --pull-secret) to the file"

// PullSecretError is a pull secret that cannot be used. It never quotes the secret.
type PullSecretError struct {
	Path string
	Msg  string
}

func (e *PullSecretError) Error() string {
	return fmt.Sprintf("pull secret %s (openshift.pullSecretFile): %s; %s", e.Path, e.Msg, PullSecretHelp)
}

// ExitCode makes a bad pull secret an invalid-input error (3).
func (e *PullSecretError) ExitCode() int { return 3 }

type pullSecret struct {
	Auths map[string]registryAuth `json:"auths"`
}

type registryAuth struct {
	Auth     string `json:"auth"`
	Username string `json:"username"`
	Password string `json:"password"`
	Email    string `json:"email"`
}

// LoadPullSecret reads and checks the pull secret at path: JSON with an
// "auths" object whose every registry has either "auth" (base64 of
// user:password) or "username" and "password". It returns the secret as
// compact JSON, the form install-config takes.
func LoadPullSecret(path string) (string, error) {
	if path == "" {
		return "", &PullSecretError{Path: "(unset)", Msg: "no file given: an openshift-profile lab runs openshift-install, whose install-config needs one even when image.path names the RHCOS image"}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", &PullSecretError{Path: path, Msg: "file not found"}
		}
		return "", &PullSecretError{Path: path, Msg: "cannot be read: " + strings.TrimPrefix(err.Error(), "open "+path+": ")}
	}
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return "", &PullSecretError{Path: path, Msg: fmt.Sprintf("is not valid JSON (syntax error at byte %d): copy it again, whole", se.Offset)}
		}
		return "", &PullSecretError{Path: path, Msg: "is not valid JSON (truncated?): copy it again, whole"}
	}
	var ps pullSecret
	if err := json.Unmarshal(data, &ps); err != nil {
		return "", &PullSecretError{Path: path, Msg: "is not a JSON object with \"auths\""}
	}
	if len(ps.Auths) == 0 {
		return "", &PullSecretError{Path: path, Msg: "has no \"auths\" entries"}
	}
	regs := make([]string, 0, len(ps.Auths))
	for r := range ps.Auths {
		regs = append(regs, r)
	}
	sort.Strings(regs)
	for _, r := range regs {
		a := ps.Auths[r]
		switch {
		case a.Auth != "":
			raw, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return "", &PullSecretError{Path: path, Msg: fmt.Sprintf("auths[%q].auth is not base64", r)}
			}
			user, pass, ok := strings.Cut(string(raw), ":")
			if !ok || user == "" || pass == "" {
				return "", &PullSecretError{Path: path, Msg: fmt.Sprintf("auths[%q].auth does not decode to \"user:password\"", r)}
			}
		case a.Username != "" && a.Password != "":
		default:
			return "", &PullSecretError{Path: path, Msg: fmt.Sprintf("auths[%q] has neither \"auth\" nor \"username\" and \"password\"", r)}
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		return "", &PullSecretError{Path: path, Msg: "is not valid JSON"}
	}
	return compact.String(), nil
}
