// Package sshd is the rehearsal bootstrap's SSH server: what RHCOS's sshd
// offers the stage transport and `bootlab lab ssh`. Users root and core log
// in with the lab's key; core (uid 1000) becomes root with sudo -n. exec
// requests run with bash -c, shell requests start a login bash, on a PTY
// when asked.
package sshd
