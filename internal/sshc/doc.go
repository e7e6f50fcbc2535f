// Package sshc is bootlab's one SSH client: the libvirt connection to a
// remote hypervisor, the hypervisor host's own commands and files, and the
// node transport all dial through it, so one host-key policy (trust on
// first use, recorded in a known_hosts file; a changed key is refused)
// serves every connection. A Client runs commands, reads and writes files
// over sessions (cat, no SFTP subsystem needed), opens TCP and unix-socket
// connections through the remote host (tunnels), and is itself a jump host
// for a Client behind it (ProxyJump).
package sshc
