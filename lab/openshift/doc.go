// Package openshift prepares the real OpenShift UPI flow for a lab: the
// openshift-install and oc binaries of the pinned version (given, on PATH,
// cached or downloaded and verified), the RHCOS image named by the
// installer's stream metadata, and the install assets (install-config.yaml,
// manifests, Ignition) made by running openshift-install in the lab's asset
// directory. It never prints: it logs through the *slog.Logger it is given.
package openshift
