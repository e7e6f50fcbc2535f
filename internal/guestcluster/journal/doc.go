// Package journal is the rehearsal node's journal: what systemd-journald
// keeps on a real node for `journalctl -u UNIT`. A rehearsal node has no
// systemd, so the parts of the guest cluster that play a unit (the kubelet
// stand-in for kubelet.service and crio.service, approve-csr, the stage
// scripts for bootkube.service) append their lines here, one file per unit
// under Dir, each line one entry in journalctl's JSON export fields
// (systemd's docs/JOURNAL_EXPORT_FORMATS.md); the journalctl stand-in reads
// them back in journalctl's own output forms.
package journal
