#!/usr/bin/env bash
# class-hosts.sh: part of `make bench`. Times a class of 8 probe labs (1
# bootstrap + 1 master each, TCG) from `bootlab class up` to every lab
# verified (`class verify`), placed over two hypervisor hosts, against the
# same 8 on one of them, side by side. The hosts are the remote-lab tests'
# simulated hosts (scripts/host/remote-host.sh: each its own network and
# mount namespaces, libvirtd and sshd, reached as qemu+ssh over a veth), so
# both sides pay the same transport; on one machine they share its cores,
# so the ratio shows what bootlab's placement and per-host parallelism
# cost or win, not a second machine's CPUs. Root, libvirtd, sshd, jq.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bootlab=${BOOTLAB:-$root/bin/bootlab}
work=${BENCH_DIR:-/var/lib/bootlab-bench}/class-hosts
script=$root/scripts/host/remote-host.sh
labs=8

# shellcheck source=bench/lib.sh
. "$here/lib.sh"
need_root "$bootlab"
command -v sshd >/dev/null || [[ -x /usr/sbin/sshd ]] || die "sshd missing: scripts/host/setup.sh --test"

rm -rf "$work"
mkdir -p "$work/home"
chmod 0755 "$(dirname "$work")" "$work" "$work/home"
ssh-keygen -q -t ed25519 -N '' -f "$work/id_ed25519" -C bootlab-bench
names=(bench0 bench1)
nets=(10.254.0.16 10.254.0.20)
uris=()

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  for c in bh1$$ bh2$$; do BOOTLAB_HOME=$work/home "$bootlab" class down -q --yes --name "$c" >/dev/null 2>&1 || true; done
  for i in 0 1; do REMOTE_HOST_NET=${nets[$i]} "$script" down "${names[$i]}" "$work/host-${names[$i]}" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

for i in 0 1; do
  dir=$work/host-${names[$i]}
  REMOTE_HOST_NET=${nets[$i]} "$script" down "${names[$i]}" "$dir" >/dev/null 2>&1 || true
  REMOTE_HOST_NET=${nets[$i]} "$script" up "${names[$i]}" "$dir" "$work/id_ed25519.pub" >/dev/null
  addr=$(sed -n 's/^addr=//p' "$dir/host.env")
  printf '%s %s\n' "$addr" "$(sed -n 's/^host_key=//p' "$dir/host.env")" >"$work/known_hosts-$i"
  uris+=("qemu+ssh://root@$addr/system?keyfile=$work/id_ed25519&known_hosts=$work/known_hosts-$i")
done

"$bootlab" lab probe-image build -q >/dev/null

# class_file NAME POOL HOST... writes a class of $labs over the hosts named.
class_file() {
  local name=$1 pool=$2
  shift 2
  {
    printf 'name: %s\ntemplate:\n  profile: probe\n  accelerator: tcg\n  topology: {masters: 1, workers: 0}\nlearners: %d\naddressPool: %s\nhosts:\n' "$name" "$labs" "$pool"
    for i in "$@"; do printf '  - name: %s\n    uri: "%s"\n' "${names[$i]}" "${uris[$i]}"; done
  } >"$work/$name.yaml"
}

# timed NAME: class up, then class verify; prints "up verify" seconds.
timed() {
  local t0 t1 t2
  t0=$(date +%s.%N)
  BOOTLAB_HOME=$work/home "$bootlab" class up -q -f "$work/$1.yaml" >/dev/null || die "class up of $1 failed"
  t1=$(date +%s.%N)
  BOOTLAB_HOME=$work/home "$bootlab" class verify -q --name "$1" --timeout 10m || die "class verify of $1 failed"
  t2=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "%.3f %.3f\n", b - a, c - b }'
}

class_file bh1$$ 10.219.0.0/21 0
class_file bh2$$ 10.219.8.0/21 0 1
c0=$(busy_ticks)
read -r one_up one_verify < <(timed bh1$$)
one_cpu=$(cpu_secs "$c0" "$(busy_ticks)")
BOOTLAB_HOME=$work/home "$bootlab" class down -q --yes --name bh1$$
c1=$(busy_ticks)
read -r two_up two_verify < <(timed bh2$$)
two_cpu=$(cpu_secs "$c1" "$(busy_ticks)")
BOOTLAB_HOME=$work/home "$bootlab" class down -q --yes --name bh2$$

awk -v n="$labs" -v ou="$one_up" -v ov="$one_verify" -v tu="$two_up" -v tv="$two_verify" -v oc="$one_cpu" -v tc="$two_cpu" -v cpus="$(nproc)" 'BEGIN {
  one = ou + ov; two = tu + tv
  printf "class of %d probe labs (1 bootstrap + 1 master each, TCG, qemu+ssh, %d cores shared by the hosts): on 1 host class up %.1fs + verify %.1fs = %.1fs; over 2 hosts %.1fs + %.1fs = %.1fs; ratio %.2fx\n", n, cpus, ou, ov, one, tu, tv, two, two / one
  printf "CPU (every process, guests included): 1 host %.1f CPU s, 2 hosts %.1f CPU s\n", oc, tc }'
say_load
