package rhcos

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/coreos/ignition/v2/config/v3_2/types"

	"github.com/bootlab/bootlab/internal/ignition"
)

// DefaultPath is the PATH of a login on RHCOS.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// User is an account of the node (/etc/passwd of the rehearsal root).
type User struct {
	Name     string
	UID, GID uint32
	Home     string
}

// Root and Core are the node's two login accounts, as on RHCOS: core
// (uid 1000) becomes root with sudo.
func Root() User { return User{Name: "root", UID: 0, GID: 0, Home: "/root"} }

// Core is the account the lab's SSH key logs in as (see Root).
func Core() User { return User{Name: "core", UID: 1000, GID: 1000, Home: "/var/home/core"} }

// LookupUser returns the login account name.
func LookupUser(name string) (User, bool) {
	for _, u := range []User{Root(), Core()} {
		if u.Name == name {
			return u, true
		}
	}
	return User{}, false
}

// UserName is the name of the account with uid, or the number.
func UserName(uid int) string {
	for _, u := range []User{Root(), Core()} {
		if int(u.UID) == uid {
			return u.Name
		}
	}
	return fmt.Sprint(uid)
}

// WriteIgnitionFiles writes every storage.files entry of cfg, with its
// mode, as Ignition does in the initramfs.
func WriteIgnitionFiles(cfg types.Config) (int, error) { return WriteIgnitionFilesExcept(cfg, nil) }

// WriteIgnitionFilesExcept is WriteIgnitionFiles without the files kept
// says to keep as they are (nil: none): a node that boots again keeps what
// its first boot's Ignition wrote on its disk, as RHCOS, where Ignition
// runs on the first boot only.
func WriteIgnitionFilesExcept(cfg types.Config, kept func(path string) bool) (int, error) {
	n := 0
	for _, f := range cfg.Storage.Files {
		if kept != nil && kept(f.Path) {
			continue
		}
		data, _, err := ignition.FileContents(cfg, f.Path)
		if err != nil {
			return n, err
		}
		mode := fs.FileMode(0o644)
		if f.Mode != nil {
			mode = fs.FileMode(*f.Mode)
		}
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
			return n, err
		}
		if err := os.WriteFile(f.Path, data, mode); err != nil {
			return n, err
		}
		if err := os.Chmod(f.Path, mode); err != nil { // past the umask
			return n, err
		}
		n++
	}
	return n, nil
}
