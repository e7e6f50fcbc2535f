// Package diagnose walks the bootstrap troubleshooting tree of the guide
// bootlab teaches (etcd healthy? -> API accessible? -> masters joining? ->
// bootkube completing?) over what a log bundle holds, and says where the
// bootstrap stopped, the log line that shows it (file and line number) and
// what to do; "healthy" only when every check it knows passed, and what
// it could not see.
//
// The input is a Bundle: files by their path in the installer's
// log-bundle layout (bootstrap/journals, bootstrap/services,
// control-plane/<ip>/..., resources/) plus bootlab's own additions
// (bootlab/*.json). ReadBundle reads one from a log-bundle-<id>.tar.gz; a
// live collector fills one with NewBundle and Add, so a bundle and a
// running lab are diagnosed by the same checks.
package diagnose
