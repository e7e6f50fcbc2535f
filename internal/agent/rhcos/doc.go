// Package rhcos is what the probe agent's node has of RHCOS, shared by the
// agent's packages: the login accounts, the PATH of a login, and the files
// Ignition lays down. It imports no other agent package.
package rhcos
