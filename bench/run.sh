#!/usr/bin/env bash
# run.sh: `make bench`. Times `bootlab lab up` + `bootlab lab down` of a
# six-node probe lab (all six VMs started, as `lab up` does for probe labs)
# against bench/virsh-lab.sh, a plain
# bash script making the same objects one virsh call at a time, on
# qemu:///system. Prints both times and the ratio; target: bootlab <= 0.25x (issue 25).
# Then the time of `lab checkpoint save` and `restore` of the same lab,
# verified, and the disk the checkpoint costs.
#
# Both sides use the same initrd, base image and Ignition files and the
# same kernel, compressed for the script (made by one untimed warm-up
# `lab up`). Root, libvirtd and haproxy needed.
# ROUNDS (default 3) alternating rounds; BENCH_STRICT=1 fails above target.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bootlab=${BOOTLAB:-$root/bin/bootlab}
rounds=${ROUNDS:-3}
work=${BENCH_DIR:-/var/lib/bootlab-bench}

# shellcheck source=bench/lib.sh
. "$here/lib.sh"
need_root "$bootlab"
for t in virsh haproxy qemu-img; do
  command -v "$t" >/dev/null || die "$t missing: apt-get install -y libvirt-clients haproxy qemu-utils"
done
virsh -c qemu:///system version >/dev/null 2>&1 || die "libvirtd not answering: mkdir -p /run/libvirt && virtlogd -d && libvirtd -d"

# /24s no route and no libvirt network uses.
load_used_nets
free24 10.215 1 120
net_bl=$net
free24 10.215 121 250
net_sh=$net

rm -rf "$work"
mkdir -p "$work/bl" "$work/sh"
chmod 0755 "$work" "$work/bl" "$work/sh"
name=bench$$
spec=$work/bl/bootlab.yaml
cat >"$spec" <<YAML
name: $name
profile: probe
accelerator: tcg
network:
  cidr: $net_bl.0/24
  mode: isolated
labDir: $work/bl/lab
storage:
  poolDir: $work/bl/pool
topology:
  masters: 3
  workers: 2
YAML
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  "$bootlab" lab down -q -f "$spec" >/dev/null 2>&1 || true
  "$here/virsh-lab.sh" down "$name" "$net_sh" "$work/sh" x x x x x >/dev/null 2>&1 || true
}
trap cleanup EXIT

bl_down() { "$bootlab" lab down -q -f "$spec"; }

echo "warm-up: bootlab lab up (builds or reuses the probe image; not timed)"
"$bootlab" lab up -q -f "$spec" --no-preflight
state=$work/bl/lab/state.json
field() { sed -n "s/^ *\"$1\": \"\(.*\)\",\{0,1\}$/\1/p" "$state" | head -n1; }
kernel=$(field kernel) initrd=$(field initrd) cmdline=$(field cmdline) base=$(field path)
[[ -n $kernel && -n $initrd && -n $base ]] || die "could not read the image from $state"
# The script boots the compressed kernel a person would hand virsh, the
# image's vmlinuz, as in every round before bootlab booted the unpacked one
# (vmlinux-pvh, docs/benchmarks.md, twenty-fifth round): the baseline
# stays what it was, and what the unpacked kernel gains is bootlab's.
if [[ $(basename "$kernel") == vmlinux-pvh && -f $(dirname "$kernel")/vmlinuz ]]; then
  kernel=$(dirname "$kernel")/vmlinuz
fi
mkdir -p "$work/sh/ignition"
cp "$work"/bl/lab/ignition/*.ign "$work/sh/ignition/"
chown -R --reference="$work/bl/lab/ignition" "$work/sh/ignition"
bl_down

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
tb=0 ts=0 cb=0 cs=0
# bootlab's side logs its phases (-v --log-format json): where its time went.
: >"$work/up-rows.tsv"
: >"$work/down-rows.tsv"
for r in $(seq 1 "$rounds"); do
  k0=$(busy_ticks)
  t0=$(now)
  "$bootlab" lab up -v --log-format json -f "$spec" --no-preflight 2>"$work/up.log" >/dev/null || { cat "$work/up.log"; die "lab up failed"; }
  tu=$(now)
  "$bootlab" lab down -v --log-format json -f "$spec" 2>"$work/down.log" >/dev/null || { cat "$work/down.log"; die "lab down failed"; }
  t1=$(now)
  k1=$(busy_ticks)
  { phase_rows "$work/up.log"; printf 'lab up\twall (the whole command)\t%s\n' "$(secs "$t0" "$tu")"; } >>"$work/up-rows.tsv"
  { phase_rows "$work/down.log"; printf 'lab down\twall (the whole command)\t%s\n' "$(secs "$tu" "$t1")"; } >>"$work/down-rows.tsv"
  "$here/virsh-lab.sh" up "$name" "$net_sh" "$work/sh" "$kernel" "$initrd" "$cmdline" "$base" "$work/sh/ignition"
  "$here/virsh-lab.sh" down "$name" "$net_sh" "$work/sh" "$kernel" "$initrd" "$cmdline" "$base" "$work/sh/ignition"
  t2=$(now)
  s1=$(cpu_secs "$k0" "$k1") s2=$(cpu_secs "$k1" "$(busy_ticks)")
  cb=$(awk -v x="$cb" -v y="$s1" 'BEGIN { print x + y }')
  cs=$(awk -v x="$cs" -v y="$s2" 'BEGIN { print x + y }')
  b=$(secs "$t0" "$t1") s=$(secs "$t1" "$t2")
  printf 'round %d: bootlab up+down %6.2fs   virsh script up+down %6.2fs\n' "$r" "$b" "$s"
  tb=$(awk -v x="$tb" -v y="$b" 'BEGIN { print x + y }')
  ts=$(awk -v x="$ts" -v y="$s" 'BEGIN { print x + y }')
done

# Checkpoints of the same 6-node lab, its nodes booted and verified: the
# time of `lab checkpoint save` and `restore`, and the disk the internal
# snapshots cost (the overlays' growth, and the memory images in them).
overlays() { find "$work/bl/pool" -maxdepth 1 -name '*.qcow2' ! -name base.qcow2 | sort; }
info_sum() { # $1: actual-size or vm-state-size; sums it over every overlay
  local f total=0 n
  for f in $(overlays); do
    n=$(qemu-img info -U --output=json "$f" | sed -n "s/^ *\"$1\": \([0-9]*\).*/\1/p" | awk '{ s += $1 } END { print s + 0 }')
    total=$((total + n))
  done
  echo "$total"
}
"$bootlab" lab up -q -f "$spec" --no-preflight
"$bootlab" lab verify -f "$spec" --timeout 10m >"$work/verify.txt" 2>&1 || { cat "$work/verify.txt"; die "the 6-node lab did not verify before its checkpoint"; }
before=$(info_sum actual-size) nodes=$(overlays | wc -l)
t0=$(now)
"$bootlab" lab checkpoint save -v --log-format json -f "$spec" bench 2>"$work/save.log" >/dev/null || { cat "$work/save.log"; die "checkpoint save failed"; }
t1=$(now)
after=$(info_sum actual-size)
memory=$(info_sum vm-state-size)
t2=$(now)
"$bootlab" lab checkpoint restore -v --log-format json -f "$spec" bench 2>"$work/restore.log" >/dev/null || { cat "$work/restore.log"; die "checkpoint restore failed"; }
t3=$(now)
bl_down
printf '\ncheckpoint of the 6-node probe lab (%s nodes running): save %ss, restore %ss, disk %s MiB (memory images %s MiB)\n' \
  "$nodes" "$(secs "$t0" "$t1")" "$(secs "$t2" "$t3")" \
  "$(awk -v a="$before" -v b="$after" 'BEGIN { printf "%.0f", (b - a) / 1048576 }')" \
  "$(awk -v m="$memory" 'BEGIN { printf "%.0f", m / 1048576 }')"
echo "where the save went (wall minus the phases: process start, spec, libvirt connection):"
{ phase_rows "$work/save.log"; printf 'save\twall (the whole command)\t%s\n' "$(secs "$t0" "$t1")"; } | phase_table 1
echo "where the restore went:"
{ phase_rows "$work/restore.log"; printf 'restore\twall (the whole command)\t%s\n' "$(secs "$t2" "$t3")"; } | phase_table 1

ratio=$(awk -v b="$tb" -v s="$ts" 'BEGIN { printf "%.2f", b / s }')
printf '\nwhere bootlab lab up went (mean of %d rounds; "lab up" phases hold the steps; wall minus them is process start, spec and libvirt connection):\n' "$rounds"
phase_table "$rounds" <"$work/up-rows.tsv"
printf 'where bootlab lab down went (mean of %d rounds):\n' "$rounds"
phase_table "$rounds" <"$work/down-rows.tsv"
printf '\n6-node lab, %d rounds: bootlab %.2fs, virsh script %.2fs, ratio %sx (target <= 0.25x)\n' "$rounds" "$tb" "$ts" "$ratio"
# The CPU the host spent on each side (libvirtd, the QEMUs it starts and
# stops, and the guests booting until `lab down` or the script stops
# them), and how busy it kept the cores: what is idle in bootlab's share
# is waiting it could still win back. No floor is printed: the guests'
# share shrinks with the time they are left to boot.
awk -v cb="$cb" -v cs="$cs" -v tb="$tb" -v ts="$ts" -v cpus="$(nproc)" 'BEGIN {
  printf "CPU (every process, the guests booting until they are stopped included): bootlab %.2f CPU s (its %d cores %.0f%% busy), the script %.2f CPU s (%.0f%% busy)\n", cb, cpus, 100 * cb / (tb * cpus), cs, 100 * cs / (ts * cpus) }'
# libvirt's own part of bootlab's time: the nodes' starts (QEMU answering
# libvirt's ~400 questions each, bound by the cores), their stops and the
# network's (libvirt polls a stopping QEMU and dnsmasq every 200 ms). The
# rest is bootlab's: what a regression outside libvirt moves.
awk -F'\t' -v runs="$rounds" -v ts="$ts" '
  $1 == "step" && ($2 ~ /^Creating [0-9]+ nodes/ || $2 == "Deleting nodes" || $2 ~ /^(Creating|Deleting) network/) { lv += $3 }
  $2 == "wall (the whole command)" { wall += $3 }
  END { printf "of bootlab'"'"'s up+down a round, libvirt starting and stopping the nodes and the network %.2fs (alone %.2fx of the script), everything else %.2fs\n", lv / runs, lv / ts, (wall - lv) / runs }' "$work/up-rows.tsv" "$work/down-rows.tsv"
if awk -v r="$ratio" 'BEGIN { exit !(r > 0.25) }'; then
  echo "bench: target missed"
  [[ ${BENCH_STRICT:-0} == 1 ]] && { say_load; exit 1; }
fi
say_load
exit 0
