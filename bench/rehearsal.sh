#!/usr/bin/env bash
# rehearsal.sh: part of `make bench`. Measures a rehearsal lab (a probe lab
# with --manual-bootstrap: 1 bootstrap, 3 masters) on this machine, with the
# accelerator given in ACCEL (default tcg): time from `bootlab lab up
# --manual-bootstrap` to SSH answering on the bootstrap, and to stages 01
# to 13 run and validated over SSH (real bash, jq and etcd on the node,
# stand-ins for the release image's operators). The probe image and the
# rehearsal tools are built (or reused) first and not timed. Stages 14 and
# 15 are not rehearsed yet (docs/rehearsal-lab.md).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bootlab=${BOOTLAB:-$root/bin/bootlab}
work=${BENCH_DIR:-/var/lib/bootlab-bench}/rehearsal
accel=${ACCEL:-tcg}

die() { echo "bench: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || die "run as root (it creates libvirt networks and VMs on qemu:///system)"
[[ -x $bootlab ]] || die "$bootlab not built: run make build"

used=$(ip -4 route; for n in $(virsh -q -c qemu:///system net-list --all --name); do virsh -c qemu:///system net-dumpxml "$n"; done)
net=
for x in $(seq 1 250); do
  if ! grep -q "10\.217\.$x\." <<<"$used"; then net=10.217.$x; break; fi
done
[[ -n $net ]] || die "no free /24 in 10.217.0.0/16"

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
  masters: 3
  workers: 0
openshift:
  manualBootstrap: true
YAML
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() { "$bootlab" lab down -q -f "$spec" >/dev/null 2>&1 || true; }
trap cleanup EXIT

"$bootlab" lab probe-image build -q --rehearsal >/dev/null
t0=$(date +%s.%N)
"$bootlab" lab up -q -f "$spec"
for _ in $(seq 1 120); do
  "$bootlab" lab ssh -f "$spec" bootstrap -- true >/dev/null 2>&1 && break
  sleep 1
done
"$bootlab" lab ssh -f "$spec" bootstrap -- true >/dev/null 2>&1 || die "the bootstrap never answered SSH"
t1=$(date +%s.%N)
"$bootlab" stage run -q -f "$spec" --to 13 >"$work/run.txt" 2>&1 || { cat "$work/run.txt"; die "stage run --to 13 failed"; }
ok=
for _ in $(seq 1 20); do
  if "$bootlab" stage validate -f "$spec" 01 02 03 04 05 06 07 08 09 10 11 12 13 >"$work/validate.txt" 2>&1; then ok=1; break; fi
  sleep 3
done
[[ -n $ok ]] || { cat "$work/validate.txt"; die "stage validate failed"; }
t2=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" -v c="$t2" -v acc="$accel" -v cpus="$(nproc)" 'BEGIN {
  printf "rehearsal lab (1 bootstrap, 3 masters, %s, %d cores): lab up --manual-bootstrap -> SSH %.1fs, -> stages 01-13 run and validated %.1fs\n", acc, cpus, b - a, c - a }'
