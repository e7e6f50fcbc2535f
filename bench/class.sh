#!/usr/bin/env bash
# class.sh: part of `make bench`. Times a class of 4 probe labs (1 bootstrap
# + 1 master each, ACCEL default tcg) from `bootlab class up` to every lab
# verified (`class verify`), against the same 4 labs made one after another
# with `lab up` + `lab verify`. Prints both times and the ratio. The probe
# image is built (or reused) first and not timed. CLASS_PARALLEL sets class
# up's --parallel (its default when unset). Root, libvirtd, haproxy.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bootlab=${BOOTLAB:-$root/bin/bootlab}
work=${BENCH_DIR:-/var/lib/bootlab-bench}/class
accel=${ACCEL:-tcg}
labs=4

# shellcheck source=bench/lib.sh
. "$here/lib.sh"
need_root "$bootlab"
virsh -c qemu:///system version >/dev/null 2>&1 || die "libvirtd not answering: mkdir -p /run/libvirt && virtlogd -d && libvirtd -d"

load_used_nets
nets=()
for _ in $(seq "$labs"); do
  free24 10.218 1 250
  nets+=("$net")
done

rm -rf "$work"
mkdir -p "$work/home" "$work/seq"
chmod 0755 "$(dirname "$work")" "$work" "$work/home" "$work/seq"
class=bc$$
cat >"$work/class.yaml" <<YAML
name: $class
template:
  profile: probe
  accelerator: $accel
  topology: {masters: 1, workers: 0}
learners: $labs
addressPool: 10.217.0.0/16
YAML
specs=()
for i in $(seq 1 "$labs"); do
  spec=$work/seq/s$i.yaml
  cat >"$spec" <<YAML
name: bs$$-$i
profile: probe
accelerator: $accel
network:
  cidr: ${nets[$((i - 1))]}.0/24
  mode: isolated
labDir: $work/seq/lab$i
storage:
  poolDir: $work/seq/pool$i
topology:
  masters: 1
  workers: 0
YAML
  specs+=("$spec")
done
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  BOOTLAB_HOME=$work/home "$bootlab" class down -q --yes --name "$class" >/dev/null 2>&1 || true
  for s in "${specs[@]}"; do "$bootlab" lab down -q -f "$s" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

"$bootlab" lab probe-image build -q >/dev/null

# Sequential: lab up + lab verify, one lab after another.
# Each lab's lab up and its verify timed apart (the breakdown of this side).
: >"$work/seq-rows.tsv"
c0=$(busy_ticks)
t0=$(date +%s.%N)
for s in "${specs[@]}"; do
  ta=$(date +%s.%N)
  "$bootlab" lab up -q -f "$s"
  tb=$(date +%s.%N)
  "$bootlab" lab verify -q -f "$s" --timeout 5m >"$work/verify.txt" || { cat "$work/verify.txt"; die "verify of $s failed"; }
  tc=$(date +%s.%N)
  awk -v a="$ta" -v b="$tb" -v c="$tc" 'BEGIN { printf "lab\tup\t%.3f\nlab\tverify (nodes boot, report, all ✓)\t%.3f\n", b - a, c - b }' >>"$work/seq-rows.tsv"
done
t1=$(date +%s.%N)
seq_cpu=$(cpu_secs "$c0" "$(busy_ticks)")
for s in "${specs[@]}"; do "$bootlab" lab down -q -f "$s"; done

# The class: class up, then class verify.
c2=$(busy_ticks)
t2=$(date +%s.%N)
BOOTLAB_HOME=$work/home "$bootlab" class up ${CLASS_PARALLEL:+--parallel $CLASS_PARALLEL} -v --log-format json -f "$work/class.yaml" 2>"$work/class-up.log" >/dev/null || { cat "$work/class-up.log"; die "class up failed"; }
tcu=$(date +%s.%N)
BOOTLAB_HOME=$work/home "$bootlab" class verify -q --name "$class" --timeout 5m || die "class verify failed"
t3=$(date +%s.%N)
class_cpu=$(cpu_secs "$c2" "$(busy_ticks)")
# The ratio, then its floor: the class's own CPU time on these cores. The
# labs in a row leave the cores idle only for the share they were not
# busy; a class can win back that share and no more.
awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v n="$labs" -v acc="$accel" -v cpus="$(nproc)" -v sc="$seq_cpu" -v cc="$class_cpu" 'BEGIN {
  seq = b - a; cls = d - c
  printf "class of %d probe labs (1 bootstrap + 1 master each, %s, %d cores): class up -> all verified %.1fs; %d sequential lab up + verify %.1fs; ratio %.2fx\n", n, acc, cpus, cls, n, seq, cls / seq
  printf "CPU (every process, guests included): in a row %.1f CPU s, the cores %.0f%% busy; the class %.1f CPU s, %.0f%% busy; the class'"'"'s CPU on %d cores takes at least %.1fs: a ratio of %.2fx at best\n", sc, 100 * sc / (seq * cpus), cc, 100 * cc / (cls * cpus), cpus, cc / cpus, cc / cpus / seq }'
# Where the time went: the sequential side's lab up and verify (mean of
# the labs), the class's up and verify, and the phases class up logged
# (each the mean of its labs: they run at the same time, so they add up to
# more than class up's wall time).
echo "where the time went:"
phase_table "$labs" <"$work/seq-rows.tsv"
awk -v a="$t2" -v b="$tcu" -v c="$t3" 'BEGIN { printf "    class        up                                               %7.2fs\n    class        verify (nodes boot, report, all ✓)               %7.2fs\n", b - a, c - b }'
phase_rows "$work/class-up.log" | { grep -v '^nodes' || true; } | phase_table "$labs" | sed 's/^    /    class lab /'
say_load
