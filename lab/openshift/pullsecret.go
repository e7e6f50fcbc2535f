package openshift

import (
	"errors"
	"fmt"

	"github.com/bootlab/bootlab/internal/userfile"
	"github.com/bootlab/bootlab/lab/spec"
)

// PullSecretHelp says where a pull secret comes from.
const PullSecretHelp = spec.PullSecretHelp

// PullSecretError is a pull secret that cannot be used. It never quotes the secret.
type PullSecretError struct {
	Path string
	Msg  string
}

func (e *PullSecretError) Error() string {
	return fmt.Sprintf("pull secret %s (openshift.pullSecretFile): %s; %s", e.Path, e.Msg, PullSecretHelp)
}

// LoadPullSecret reads and checks the pull secret at path (see
// spec.CheckPullSecret, which spec validation runs too). It returns the
// secret as compact JSON, the form install-config takes.
func LoadPullSecret(path string) (string, error) {
	if path == "" {
		return "", &PullSecretError{Path: "(unset)", Msg: "no file given: an openshift-profile lab runs openshift-install, whose install-config needs one even when image.path names the RHCOS image"}
	}
	data, err := userfile.Read(path, userfile.MaxTextBytes)
	if err != nil {
		var fe *userfile.Error
		if errors.As(err, &fe) && fe.NotExist {
			return "", &PullSecretError{Path: path, Msg: "file not found"}
		}
		if errors.As(err, &fe) {
			return "", &PullSecretError{Path: path, Msg: fe.Msg}
		}
		return "", &PullSecretError{Path: path, Msg: "cannot be read: " + err.Error()}
	}
	compact, err := spec.CheckPullSecret(data)
	if err != nil {
		return "", &PullSecretError{Path: path, Msg: err.Error()}
	}
	return compact, nil
}
