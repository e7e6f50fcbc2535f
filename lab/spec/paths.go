package spec

import (
	"os"
	"path/filepath"
	"strings"
)

// The directories a spec names are places bootlab creates files in and,
// at `lab down`, removes them from. Whatever a spec says, bootlab only
// removes what it can prove it made (lab/labdir), but a lab directory of
// "/etc" or a pool directory of "/var/lib/libvirt/images" is a mistake
// worth naming before anything runs, not a directory to claim.

// systemTrees are directories no lab file belongs in, at any depth: the
// operating system's own trees and the kernel's pseudo file systems.
var systemTrees = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
	"/proc", "/sbin", "/sys", "/usr"}

// systemDirs are directories that hold other things' files: bootlab may
// make a lab directory below them, never use one of them as its own.
var systemDirs = []string{"/var/lib", "/var/log", "/var/tmp", "/var/cache", "/var/spool", "/var/run",
	"/var/mail", "/var/opt", "/var/backups", "/var/local", "/var/lib/libvirt", "/var/lib/libvirt/images",
	"/var/lib/libvirt/qemu", "/var/lib/libvirt/dnsmasq", "/var/lib/libvirt/boot", "/run/user", "/home", "/srv", "/opt", "/mnt", "/media"}

// CleanDirs cleans the paths of every directory the spec names
// (filepath.Clean: "/var/lib/bootlab/labs/../../../../etc" is "/etc"), so
// validation and every later use see the one path that is really meant.
// Relative paths stay relative, for Validate to name.
func (s *Spec) CleanDirs() {
	for _, p := range []*string{&s.LabDir, &s.Storage.PoolDir, &s.Libvirt.HostDir} {
		if *p != "" {
			*p = filepath.Clean(*p)
		}
	}
}

// SystemDirProblem says why p (clean and absolute) is not a directory
// bootlab may claim for a lab, or "" when it may: a system directory
// ("/", "/etc", "/var/lib", "/home", ...), anything under the operating
// system's own trees, a user's home directory itself, or bootlab's own
// home and its lab, class and cache roots (which hold other labs).
// local is false for a path on a remote hypervisor's machine, where this
// machine's home directories say nothing.
func SystemDirProblem(p string, local bool) string {
	if local {
		if home, err := os.UserHomeDir(); err == nil && home != "" && filepath.Clean(home) == p {
			return "is your home directory"
		}
	}
	if p == "/" || filepath.Dir(p) == "/" {
		return "is a top-level system directory"
	}
	for _, t := range systemTrees {
		if p == t || strings.HasPrefix(p, t+"/") {
			return "is inside " + t + ", which belongs to the operating system"
		}
	}
	for _, d := range systemDirs {
		if p == d {
			return "is a system directory that holds other programs' files"
		}
	}
	if filepath.Dir(p) == "/home" {
		return "is a user's home directory"
	}
	if !local {
		return ""
	}
	bl := filepath.Clean(DefaultHome())
	for _, d := range []string{bl, filepath.Join(bl, "labs"), filepath.Join(bl, "classes"), filepath.Join(bl, "cache")} {
		if p == d {
			return "is bootlab's own directory, which holds other labs and the cache"
		}
	}
	return ""
}

// validateDirs checks the directories the spec names: absolute, not a
// system directory, and not one another (a pool directory that is also
// the lab directory would make the lab's files volumes of its pool).
func (s *Spec) validateDirs(e *errs) {
	dirs := []struct {
		field, path string
		local, opt  bool
		what, eg    string
	}{
		{"labDir", s.LabDir, true, false, "", filepath.Join(DefaultHome(), "labs", s.Name)},
		{"storage.poolDir", s.Storage.PoolDir, !s.Remote(), false, "", "/var/lib/libvirt/images/bootlab-" + s.Name},
		{"libvirt.hostDir", s.Libvirt.HostDir, false, true, " on the hypervisor's machine", "/var/lib/bootlab/labs/" + s.Name},
	}
	for _, d := range dirs {
		switch {
		case d.path == "" && d.opt:
		case !filepath.IsAbs(d.path):
			e.add(d.field, "%q must be an absolute path%s", d.path, d.what)
		default:
			p := filepath.Clean(d.path)
			if why := SystemDirProblem(p, d.local); why != "" {
				e.add(d.field, "%s %s: bootlab creates and later removes a lab's files there; use a directory of its own (the default, %s, when the line is left out)",
					p, why, d.eg)
			}
		}
	}
	if !s.Remote() && filepath.IsAbs(s.LabDir) && filepath.Clean(s.LabDir) == filepath.Clean(s.Storage.PoolDir) {
		e.add("storage.poolDir", "%s is also the labDir: give the pool a directory of its own (remove the line for the default)", s.Storage.PoolDir)
	}
}
