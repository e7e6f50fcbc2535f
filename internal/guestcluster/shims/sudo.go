package shims

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/bootlab/bootlab/internal/rhcos"
)

// SudoPath is where the sudo stand-in lives: a set-user-ID link to the
// agent, which acts as sudo when started under that name (sudoMain).
const SudoPath = "/usr/bin/sudo"

// sudoMain is the sudo stand-in: core (or root) may run any command as
// root without a password, as RHCOS's sudoers lets core. It understands
// the options the stage transport and learners use: -n, -E, -H, -i, -s,
// -u root and --.
func sudoMain(args []string) int {
	uid := os.Getuid()
	if uid != 0 && uid != int(rhcos.Core().UID) {
		fmt.Fprintln(os.Stderr, "sudo: a password is required (only core may sudo on this node)")
		return 1
	}
	login, keepEnv := false, false
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		opt := args[0]
		args = args[1:]
		switch opt {
		case "--":
			goto run
		case "-n", "--non-interactive", "-H", "--set-home", "-S", "--stdin":
		case "-E", "--preserve-env":
			keepEnv = true
		case "-i", "--login", "-s", "--shell":
			login = true
		case "-u", "--user":
			if len(args) == 0 || (args[0] != "root" && args[0] != "0" && args[0] != "#0") {
				fmt.Fprintln(os.Stderr, "sudo: this node's sudo (a bootlab stand-in) runs commands as root only")
				return 1
			}
			args = args[1:]
		case "-V", "--version":
			fmt.Println("sudo: bootlab's stand-in for sudo on the rehearsal bootstrap (core may run anything as root, as on RHCOS)")
			return 0
		default:
			fmt.Fprintf(os.Stderr, "sudo: option %s is not supported by this node's sudo (a bootlab stand-in)\n", opt)
			return 1
		}
	}
run:
	if len(args) == 0 && !login {
		fmt.Fprintln(os.Stderr, "usage: sudo [-n] [-E] [-i] [--] COMMAND [ARG...]")
		return 1
	}
	if err := unix.Setgroups([]int{0}); err != nil {
		fmt.Fprintf(os.Stderr, "sudo: %v (is %s set-user-ID root?)\n", err, SudoPath)
		return 1
	}
	if err := unix.Setresgid(0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "sudo: %v\n", err)
		return 1
	}
	if err := unix.Setresuid(0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "sudo: %v\n", err)
		return 1
	}
	env := []string{"HOME=/root", "USER=root", "LOGNAME=root", "SHELL=/bin/bash", "PATH=" + rhcos.DefaultPath,
		fmt.Sprintf("SUDO_UID=%d", uid), fmt.Sprintf("SUDO_GID=%d", os.Getgid()), "SUDO_USER=" + rhcos.UserName(uid)}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if keepEnv && name != "PATH" && name != "HOME" && !strings.HasPrefix(name, "LD_") {
			env = append(env, kv)
		} else if name == "TERM" || name == "LANG" || strings.HasPrefix(name, "LC_") {
			env = append(env, kv)
		}
	}
	if login {
		if len(args) == 0 {
			args = []string{"/bin/bash", "-l"}
		} else {
			args = []string{"/bin/bash", "-c", strings.Join(args, " ")}
		}
		_ = os.Chdir("/root")
	}
	path := args[0]
	if !strings.Contains(path, "/") {
		for _, dir := range filepath.SplitList(rhcos.DefaultPath) {
			if fi, err := os.Stat(filepath.Join(dir, path)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				path = filepath.Join(dir, path)
				break
			}
		}
	}
	err := unix.Exec(path, args, env)
	fmt.Fprintf(os.Stderr, "sudo: %s: %v\n", args[0], err)
	return 1
}
