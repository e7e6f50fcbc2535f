#!/usr/bin/env bash
# probe-green.sh: part of `make bench`. Measures the time from `bootlab lab up`
# to `bootlab lab verify` reporting every check ✓ for a six-node probe lab
# (1 bootstrap, 3 masters, 2 workers) on this machine, with the accelerator
# given in ACCEL (default tcg, what CI machines have). The probe image is
# built (or reused) first and not timed. Target: 15 s on 2 cores, TCG (issue 25).
# It also prints the size of the probe agent (the initramfs's /init) and of
# the initramfs, what a change to the agent's dependencies costs each boot.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bootlab=${BOOTLAB:-$root/bin/bootlab}
work=${BENCH_DIR:-/var/lib/bootlab-bench}/green
accel=${ACCEL:-tcg}

# shellcheck source=bench/lib.sh
. "$here/lib.sh"
need_root "$bootlab"
for t in jq cpio; do
  command -v "$t" >/dev/null || die "$t missing: apt-get install -y $t (scripts/host/setup.sh --test installs it)"
done

load_used_nets
free24 10.216 1 250

rm -rf "$work"
mkdir -p "$work"
chmod 0755 "$(dirname "$work")" "$work"
spec=$work/bootlab.yaml
cat >"$spec" <<YAML
name: green$$
profile: probe
accelerator: $accel
network:
  cidr: $net.0/24
  mode: isolated
labDir: $work/lab
storage:
  poolDir: $work/pool
topology:
  masters: 3
  workers: 2
YAML
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() { "$bootlab" lab down -q -f "$spec" >/dev/null 2>&1 || true; }
trap cleanup EXIT

initrd=$("$bootlab" lab probe-image build -q -o json | jq -r .image.initrd)
agent_bytes=$(gzip -dc "$initrd" | cpio -t -v --quiet --numeric-uid-gid init | awk '{print $5}')
[[ $agent_bytes =~ ^[0-9]+$ ]] || die "no /init in $initrd"
awk -v a="$agent_bytes" -v i="$(stat -c %s "$initrd")" 'BEGIN {
  printf "probe agent (/init) %d bytes (%.1f MiB), initramfs %d bytes (%.1f MiB, gzip)\n", a, a / 1048576, i, i / 1048576 }'
t0=$(date +%s.%N)
"$bootlab" lab up -v --log-format json -f "$spec" 2>"$work/up.log" >/dev/null || { cat "$work/up.log"; die "lab up failed"; }
t1=$(date +%s.%N)
"$bootlab" lab verify -q -f "$spec" --timeout 5m >"$work/verify.txt" || { cat "$work/verify.txt"; die "verify failed"; }
t2=$(date +%s.%N)
guest_cpu "green$$" >"$work/guest-cpu.tsv"
checks=$(grep -c '✓' "$work/verify.txt" || true)
awk -v a="$t0" -v b="$t1" -v c="$t2" -v n="$checks" -v acc="$accel" -v cpus="$(nproc)" 'BEGIN {
  printf "probe lab (1 bootstrap, 3 masters, 2 workers, %s, %d cores): lab up %.1fs, lab up -> all %d checks ✓ %.1fs (target <= 15 s)\n", acc, cpus, b - a, n, c - a }'

# Where the time went, from the reports the nodes wrote on their consoles
# (the last whole report of each node). "agent" is when the probe agent
# started, against the start of lab up (the guest clock comes from the
# RTC: +-1 s); dhcp and ignition-fetch are those checks' own durations;
# "reported" is when the node's last check finished; verify's own time is
# what follows the slowest node's report.
lastreport() {
  grep -ao 'BOOTLAB-PROBE-REPORT {.*' "$1" | sed 's/^BOOTLAB-PROBE-REPORT //' | tac |
    while IFS= read -r line; do
      if jq -e '.checks' >/dev/null 2>&1 <<<"$line"; then printf '%s\n' "$line"; break; fi
    done
}
rows=$work/breakdown.tsv
: >"$rows"
for log in "$work"/lab/console/*.log; do
  rep=$(lastreport "$log")
  [[ -n $rep ]] || die "no whole probe report in $log"
  jq -r --argjson t0 "$t0" '
    def epoch: sub("\\.[0-9]+"; "") | sub("[+-]00:00$"; "Z") | fromdateiso8601;
    def ms($n): ([.checks[] | select(.name == $n) | .durationMs] | add // 0) / 1000;
    [ .node,
      ((.boot | epoch) - $t0),
      ms("dhcp"),
      ms("ignition-fetch"),
      ([.checks[] | ((.start | epoch) + .durationMs / 1000)] | max) - $t0,
      ([.checks[] | ((.start | epoch) + .durationMs / 1000)] | min) - $t0
    ] | @tsv' <<<"$rep" >>"$rows"
done
awk -F'\t' -v t2="$t2" -v t0="$t0" -v t1="$t1" '
  { if ($2 > agent) agent = $2; if ($3 > dhcp) dhcp = $3; if ($4 > fetch) fetch = $4
    if ($5 > done) { done = $5; slow = $1 }; if ($6 > first) first = $6 }
  END { printf "  where the time went (slowest of %d nodes): lab up %.1fs, boot or restore (lab up end -> agent) %.1fs, agent started %.1fs after lab up began, dhcp %.1fs, ignition-fetch %.1fs, first check done %.1fs, last node (%s) reported all checks at %.1fs, verify saw every check ✓ at %.1fs\n",
        NR, t1 - t0, agent - (t1 - t0), agent, dhcp, fetch, first, slow, done, t2 - t0 }' "$rows"
# What each node cost to get there, and what its console carried: the
# agent's report lines go through an emulated UART a byte at a time
# (docs/benchmarks.md, twenty-eighth round).
for log in "$work"/lab/console/*.log; do
  printf '%s\t%s\t%s\n' "$(basename "$log" .log)" "$(grep -ac 'BOOTLAB-PROBE-REPORT' "$log")" "$(stat -c %s "$log")"
done >"$work/console.tsv"
awk -F'\t' 'NR == FNR { cpu[$1] = $2; next }
  { n++; s += cpu[$1]; if (cpu[$1] > max) { max = cpu[$1]; who = $1 }
    if (lmin == "" || $2 < lmin) lmin = $2; if ($2 > lmax) lmax = $2
    if (bmin == "" || $3 < bmin) bmin = $3; if ($3 > bmax) bmax = $3 }
  END { printf "  what a node cost: its QEMU from start to verify passing %.2f CPU s on average, %.2f the most (%s); its console %d to %d report lines, %.1f to %.1f KB\n",
        s / n, max, who, lmin, lmax, bmin / 1000, bmax / 1000 }' "$work/guest-cpu.tsv" "$work/console.tsv"
echo "  where lab up went:"
{ phase_rows "$work/up.log"; printf 'lab up\twall (the whole command)\t%s\n' "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"; } | phase_table 1
say_load
