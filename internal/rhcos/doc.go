// Package rhcos is what a probe node has of RHCOS, shared by the guest
// agent and the guest cluster it plays: the login accounts, the PATH of a
// login, and the files Ignition lays down. It imports no bootlab package
// but internal/ignition.
package rhcos
