// Package logbundle writes a log bundle in the installer's layout
// (log-bundle-<id>.tar.gz, everything under log-bundle-<id>/), which
// lab/diagnose reads: through a temporary file renamed into place, within
// a size cap per file and per bundle, and through a filter that leaves
// credentials out (private keys, pull secrets, kubeconfigs' credentials,
// tokens, Secret objects), by path and by content. What it leaves out, and
// what a gather could not see, it lists in bootlab/missing.json.
package logbundle
