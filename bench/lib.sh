# lib.sh: what every `make bench` script starts with. Sourced, not run.
# shellcheck shell=bash

die() { echo "bench: $*" >&2; exit 1; }

# need_root BOOTLAB refuses to run unless root and BOOTLAB is built.
need_root() {
  [[ $(id -u) == 0 ]] || die "run as root (it creates libvirt networks and VMs on qemu:///system)"
  [[ -x $1 ]] || die "$1 not built: run make build"
  command -v jq >/dev/null || die "jq missing: apt-get install -y jq (it reads the phases bootlab logs)"
  say_load
}

# Every route and libvirt network of the host, to pick free /24s from.
used_nets=
load_used_nets() {
  used_nets=$(ip -4 route; for n in $(virsh -q -c qemu:///system net-list --all --name); do virsh -c qemu:///system net-dumpxml "$n"; done)
}

# free24 PREFIX FROM TO sets net to the first PREFIX.X (FROM <= X <= TO)
# that no route and no libvirt network uses, and marks it used, so the
# next call picks another. PREFIX is two octets, e.g. 10.216.
free24() {
  local x
  net=
  for x in $(seq "$2" "$3"); do
    if ! grep -qF "$1.$x." <<<"$used_nets"; then
      net=$1.$x
      used_nets+=" $net."
      return
    fi
  done
  die "no free /24 in $1.$2-$3.0/24"
}

# phase_rows LOG prints where the time of one bootlab command went, from
# what it logged with `-v --log-format json` on stderr: its timing lines
# (package internal/timing: of, phase, seconds) and its step lines
# (elapsedMs), one "of<TAB>phase<TAB>seconds" row each, in the order they
# ended. Per-node timings (of "nodes") become the slowest node's, per
# action. Lab names, paths and addresses are cut from the phase names.
phase_rows() {
  grep -a '^{' "$1" | jq -rs '
    def clean: gsub(" (bootlab-[^ ]*|/[^ ]*)"; "") | gsub(" on [0-9.]+"; "");
    (.[] | if .msg == "timing" and .of != "nodes" then [.of, (.phase | clean), .seconds]
           elif .step != null and .elapsedMs != null then ["step", (.step | clean), (.elapsedMs / 1000)]
           else empty end),
    ([.[] | select(.msg == "timing" and .of == "nodes")] | group_by(.phase | split(" ") | last)[]
      | ["nodes", "slowest node " + (.[0].phase | split(" ") | last), (map(.seconds) | max)])
    | @tsv'
}

# phase_table RUNS prints the rows of phase_rows of RUNS runs (on stdin) as
# the mean of each phase over the runs, in the order they first appear.
phase_table() {
  awk -F'\t' -v runs="$1" '
    { k = $1 "\t" $2; if (!(k in sum)) order[n++] = k; sum[k] += $3 }
    END { for (i = 0; i < n; i++) { split(order[i], p, "\t"); printf "    %-12s %-48s %7.2fs\n", p[1], p[2], sum[order[i]] / runs } }'
}

# busy_ticks prints how long the host's cores have been busy since boot,
# all cores, in ticks: /proc/stat's total less idle and iowait, as .ci/run
# reads it (every process: bootlab, libvirtd, QEMU and its guests).
busy_ticks() {
  awk '/^cpu /{t=0; for (i = 2; i <= 9; i++) t += $i; print t - $5 - $6; exit}' /proc/stat
}

# cpu_secs FROM TO prints the CPU seconds between two busy_ticks readings.
# Work that takes W CPU seconds cannot end in less than W / cores seconds
# of wall time, however it is scheduled: the floor of a ratio whose two
# sides do the same work (bench/class.sh).
cpu_secs() {
  awk -v a="$1" -v b="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (b - a) / hz }'
}

# guest_cpu LAB prints one "node<TAB>CPU seconds" row for each running
# QEMU of lab LAB: the CPU its process has used since it started (the
# restore or boot, the guest's work, the host's answers to it).
guest_cpu() {
  local p name hz
  hz=$(getconf CLK_TCK)
  for p in $(pgrep -f "guest=bootlab-$1-" || true); do
    name=$(tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | grep -o "guest=bootlab-$1-[^,]*" | head -1) || continue
    # utime and stime, /proc/PID/stat's 14th and 15th fields: the 12th
    # and 13th once "PID (COMM) " is cut.
    sed 's/.*) //' "/proc/$p/stat" 2>/dev/null |
      awk -v n="${name#guest=bootlab-"$1"-}" -v hz="$hz" '{ printf "%s\t%.2f\n", n, ($12 + $13) / hz }'
  done
}

# say_load prints the machine's load: every figure is read against it (the
# machine may be shared).
say_load() { echo "load: $(uptime)"; }
