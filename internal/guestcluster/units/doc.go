// Package units is the rehearsal bootstrap's stand-in of systemd for the
// services the agent runs itself (approve-csr.service, progress.service):
// a table of units, each started, stopped and restarted as systemd does,
// with systemd's own lines in the unit's journal, and a unix socket the
// systemctl stand-in (shims) asks through. It stands in for systemd's job
// engine (systemd src/core/job.c, service.c) for these units only.
package units
