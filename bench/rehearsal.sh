#!/usr/bin/env bash
# rehearsal.sh: part of `make bench`. Measures a rehearsal lab (a probe lab
# with --manual-bootstrap: 1 bootstrap, 3 masters) on this machine, with the
# accelerator given in ACCEL (default tcg): time from `bootlab lab up
# --manual-bootstrap` to SSH answering on the bootstrap, to all fifteen
# stages run over SSH (01 to 06 one command each, as a learner runs them,
# then `stage run --from 07`: real bash, jq and etcd on the node, stand-ins
# for the release image's operators; the masters' etcd members join
# 1 -> 4 and the bootstrap's leaves 4 -> 3), to `stage validate --all`,
# and to `lab pivot` then `lab verify` all ✓. Then the nodes' memory: the
# peak of each VM's qemu process (VmHWM: the guest RAM it touched plus
# qemu's own) and the guests' MemTotal-MemAvailable at the end. The probe
# image and the rehearsal tools are built (or reused) first, timed apart.
# BOOTLAB_BEFORE=/path/to/another/bootlab runs each trivial stage (or
# those in AB_STAGES) with that build too, `stage reset` between the two
# runs, the builds taking turns at going first (right after a reset the
# node's first SSH session is slower), for a before/after side by side.
# Breakdowns (from -v --log-format json): lab up's phases, and where a
# trivial stage's time goes (SSH dial, node checks, checkpoint, bash).
# MASTERS (default 3) sets the lab's masters; TRIVIAL_ONLY=1 stops after
# the trivial stages and their breakdowns (a before/after of a change to
# `stage run` itself, without the minutes of stages 07 to 15).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bootlab=${BOOTLAB:-$root/bin/bootlab}
work=${BENCH_DIR:-/var/lib/bootlab-bench}/rehearsal
accel=${ACCEL:-tcg}
masters=${MASTERS:-3}

# shellcheck source=bench/lib.sh
. "$here/lib.sh"
need_root "$bootlab"

load_used_nets
free24 10.217 1 250

rm -rf "$work"
mkdir -p "$work"
chmod 0755 "$(dirname "$work")" "$work"
spec=$work/bootlab.yaml
cat >"$spec" <<YAML
name: rehearsal$$
profile: probe
accelerator: $accel
network:
  cidr: $net.0/24
  mode: isolated
labDir: $work/lab
storage:
  poolDir: $work/pool
topology:
  masters: $masters
  workers: 0
openshift:
  manualBootstrap: true
YAML
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() { "$bootlab" lab down -q -f "$spec" >/dev/null 2>&1 || true; }
trap cleanup EXIT

tb=$(date +%s.%N)
"$bootlab" lab probe-image build -v --log-format json --rehearsal 2>"$work/image.log" >/dev/null || { cat "$work/image.log"; die "probe-image build --rehearsal failed"; }
t0=$(date +%s.%N)
"$bootlab" lab up -v --log-format json -f "$spec" 2>"$work/up.log" >/dev/null || { cat "$work/up.log"; die "lab up --manual-bootstrap failed"; }
tu=$(date +%s.%N)
for _ in $(seq 1 120); do
  "$bootlab" lab ssh -f "$spec" bootstrap -- true >/dev/null 2>&1 && break
  sleep 1
done
"$bootlab" lab ssh -f "$spec" bootstrap -- true >/dev/null 2>&1 || die "the bootstrap never answered SSH"
t1=$(date +%s.%N)
# The trivial stages one command each, as a learner runs them: each is an
# SSH dial, the node checks, the before-NN checkpoint and a little bash;
# then the rest in one run.
: >"$work/stage-rows.tsv"
: >"$work/before-rows.tsv"
# timed_stage BUILD NAME N runs stage N with BUILD, adding its breakdown to
# NAME-rows.tsv and its wall time to stage-walls.txt.
timed_stage() {
  local build=$1 name=$2 n=$3 ts te
  ts=$(date +%s.%N)
  "$build" stage run -v --log-format json -f "$spec" "$n" >"$work/$name-$n.txt" 2>"$work/$name-$n.log" || { cat "$work/$name-$n.log"; die "stage run $n ($build) failed"; }
  te=$(date +%s.%N)
  { phase_rows "$work/$name-$n.log"; printf 'stage run\twall (the whole command)\t%s\n' "$(awk -v a="$ts" -v b="$te" 'BEGIN { print b - a }')"; } >>"$work/$name-rows.tsv"
  awk -v a="$ts" -v b="$te" -v n="$n" -v w="$name" 'BEGIN { printf "%s: stage run %s: %.2fs\n", w, n, b - a }' >>"$work/stage-walls.txt"
}
# print_trivial prints the trivial stages: each one's wall time, and where
# the time of one went (the mean over 01 ... 06; target 1.5 s), with
# BOOTLAB_BEFORE's side by side.
print_trivial() {
  local runs
  tr '\n' ' ' <"$work/stage-walls.txt"; echo
  echo "where a trivial stage went (mean of stage run 01 ... 06; wall minus the phases is process start, spec and state):"
  phase_table 6 <"$work/stage-rows.tsv"
  if [[ -s $work/before-rows.tsv ]]; then
    runs=$(grep -c 'wall (the whole command)' "$work/before-rows.tsv")
    echo "the same with $BOOTLAB_BEFORE, side by side (mean of its $runs runs):"
    phase_table "$runs" <"$work/before-rows.tsv"
  fi
}
for n in 01 02 03 04 05 06; do
  # BOOTLAB_BEFORE (another bootlab build) runs the stage too, and `stage
  # reset` puts the node back between the two: the builds side by side.
  # They take turns at going first: the first SSH session after a reset
  # (a node resumed from its snapshot) is slower, and each build gets it
  # on half of the stages.
  if [[ -n ${BOOTLAB_BEFORE:-} && " ${AB_STAGES:-01 02 03 04 05 06} " == *" $n "* ]]; then
    first=("$BOOTLAB_BEFORE" before) second=("$bootlab" stage)
    if (( 10#$n % 2 == 0 )); then first=("$bootlab" stage) second=("$BOOTLAB_BEFORE" before); fi
    timed_stage "${first[@]}" "$n"
    "$bootlab" stage reset -q -f "$spec" "$n" >"$work/reset-$n.txt" 2>&1 || { cat "$work/reset-$n.txt"; die "stage reset $n failed"; }
    timed_stage "${second[@]}" "$n"
  else
    timed_stage "$bootlab" stage "$n"
  fi
done
if [[ ${TRIVIAL_ONLY:-} == 1 ]]; then
  print_trivial
  say_load
  exit 0
fi
# Sample the bootstrap's memory while stages 07 to 15 run (the node has no
# awk). Not during the trivial stages: a sample is an SSH session and a few
# programs on the node every 5 s, and with it beside them the trivial stages
# measured 5.7 to 6.7 s on a 1+3 lab (3.2 to 3.7 s by hand without it).
# shellcheck disable=SC2016 # expanded on the node
meminfo='t=$(grep ^MemTotal: /proc/meminfo | tr -s " " | cut -d" " -f2); a=$(grep ^MemAvailable: /proc/meminfo | tr -s " " | cut -d" " -f2); echo $(( (t-a)/1024 )) $(( t/1024 ))'
(while :; do
  "$bootlab" lab ssh -f "$spec" bootstrap -- "$meminfo" 2>/dev/null | while read -r used total; do
    echo "$used" >>"$work/bootstrap-mem.txt"; echo "$total" >"$work/bootstrap-total.txt"
  done
  sleep 5
done) &
sampler=$!
"$bootlab" stage run -q -f "$spec" --from 07 >"$work/run.txt" 2>&1 || { kill "$sampler"; cat "$work/run.txt"; die "stage run --from 07 failed"; }
t2=$(date +%s.%N)
kill "$sampler" 2>/dev/null || true
"$bootlab" stage validate -f "$spec" --all >"$work/validate.txt" 2>&1 || { cat "$work/validate.txt"; die "stage validate --all failed"; }
t3=$(date +%s.%N)
"$bootlab" lab pivot -q -f "$spec" >"$work/pivot.txt" 2>&1 || { cat "$work/pivot.txt"; die "lab pivot failed"; }
"$bootlab" lab verify -f "$spec" --timeout 3m >"$work/verify.txt" 2>&1 || { cat "$work/verify.txt"; die "lab verify is not all ✓"; }
t4=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v e="$t4" -v m="$masters" -v acc="$accel" -v cpus="$(nproc)" 'BEGIN {
  printf "rehearsal lab (1 bootstrap, %d masters, %s, %d cores): lab up --manual-bootstrap -> SSH %.1fs, -> stage run 01 ... 06 one at a time and --from 07 (15 stages) %.1fs, -> stage validate --all %.1fs, -> pivot + verify all ✓ %.1fs\n", m, acc, cpus, b - a, c - a, d - a, e - a }'
# Ready for stage run 07: the image (download and build; warm when cached),
# lab up's phases, then the bootstrap booting to SSH answering.
awk -v i="$tb" -v a="$t0" -v u="$tu" -v b="$t1" 'BEGIN {
  printf "ready for stage run: probe-image build --rehearsal %.1fs (warm when cached), lab up %.1fs, boot to SSH answering %.1fs; lab up -> SSH %.1fs\n", a - i, u - a, b - u, b - a }'
echo "where probe-image build --rehearsal and lab up --manual-bootstrap went:"
{ phase_rows "$work/image.log"; phase_rows "$work/up.log"; printf 'lab up\twall (the whole command)\t%s\n' "$(awk -v a="$t0" -v b="$tu" 'BEGIN { print b - a }')"; } | phase_table 1
print_trivial

# Memory, from the guests (MemTotal-MemAvailable; the host's view of a TCG
# qemu includes its translation cache): the bootstrap's peak over the
# samples taken every 5 s while the stages ran, and each master's at its
# last etcd report (they have no SSH; the report says it).
peak=$(sort -n "$work/bootstrap-mem.txt" 2>/dev/null | tail -1)
echo "memory bootstrap: peak ${peak:-?} MiB in use of $(grep -m1 . "$work/bootstrap-total.txt" 2>/dev/null || echo '?') MiB (sampled every 5 s during stage run --all)"
"$bootlab" lab verify -f "$spec" -o json 2>/dev/null |
  jq -r '.checks[] | select(.name == "etcd member") | "memory \(.group): " + (.detail | capture("node memory in use: (?<m>[0-9]+ of [0-9]+ MiB)").m) + " in use at its last etcd report"' || true
say_load
