#!/usr/bin/env bash
# remote-host.sh: a second libvirt "host" on this machine, for the remote-lab
# e2e test (issue 16). It is reached from the root namespace only over a veth
# pair and SSH, like a hypervisor across the room:
#
#   - a network namespace NAME (ip netns), veth ROOT_ADDR/30 <-> HOST_ADDR/30;
#   - a mount namespace (bind-mounted at DIR/ns/mnt) with its own /run,
#     /etc/libvirt, /var/lib/libvirt, /var/log/libvirt,
#     /var/cache/libvirt, and bootlab's homes and caches (/var/lib/bootlab,
#     /var/lib/bootlab-e2e, /var/cache/bootlab, /root/.cache/bootlab: tmpfs),
#     so it cannot see the workstation's labs, caches or libvirt state, and
#     what it writes there is not seen on the workstation either;
#   - inside both: its own virtlogd, libvirtd (qemu cgroups off, so it does not
#     share cgroup directories with the root's libvirtd) and sshd (root login
#     by key only, the key in PUBKEY, listening on HOST_ADDR:22).
#
# Usage:
#   remote-host.sh up NAME DIR PUBKEY    build it (DIR: state, logs; fresh or absent)
#   remote-host.sh down NAME DIR         remove it: processes, mounts, veth, netns
#   remote-host.sh exec NAME DIR CMD...  run CMD inside (tests: dumpxml, pgrep)
#
# Environment: REMOTE_HOST_NET (default 10.254.0.0), the /30 to use: .1 is the
# root side, .2 the host. up refuses a range that any route already covers.
set -euo pipefail

usage() {
  sed -n 's/^#   //p' "$0" >&2
  exit 2
}

die() {
  echo "remote-host.sh: $*" >&2
  exit 1
}

[[ $# -ge 3 ]] || usage
cmd=$1 name=$2 dir=$3
shift 3
[[ $name =~ ^[a-z0-9]{1,8}$ ]] || die "NAME $name: use 1-8 lower-case letters or digits (it names veth devices)"
[[ $(id -u) -eq 0 ]] || die "run as root: it creates namespaces and starts libvirtd"

net=${REMOTE_HOST_NET:-10.254.0.0}
[[ $net =~ ^([0-9]+\.[0-9]+\.[0-9]+)\.([0-9]+)$ ]] || die "REMOTE_HOST_NET $net: want an IPv4 address such as 10.254.0.0"
base=${BASH_REMATCH[1]} last=${BASH_REMATCH[2]}
((last % 4 == 0 && last <= 252)) || die "REMOTE_HOST_NET $net: want the first address of a /30 (last octet a multiple of 4)"
root_addr=$base.$((last + 1))
host_addr=$base.$((last + 2))
veth_root=blr-$name-o
veth_host=blr-$name-i
mntns=$dir/ns/mnt

inside() {
  nsenter --net="/run/netns/$name" --mount="$mntns" -- "$@"
}

wait_for() { # what, tries (0.2 s each), command...
  local what=$1 tries=$2
  shift 2
  for ((i = 0; i < tries; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  die "$what did not come up (logs in $dir/log)"
}

up() {
  local pubkey=$1
  [[ -r $pubkey ]] || die "PUBKEY $pubkey: not readable (an OpenSSH public key, e.g. from ssh-keygen)"
  [[ ! -e /run/netns/$name ]] || die "network namespace $name exists: run \`$0 down $name $dir\` first"
  if ip -4 route show | grep -q "^$base\.$last/30\|^$root_addr \|^$host_addr "; then
    die "$net/30 is already routed here: pick another with REMOTE_HOST_NET"
  fi
  ip -br link show "$veth_root" >/dev/null 2>&1 && die "device $veth_root exists: run \`$0 down $name $dir\`"
  mkdir -p "$dir/ns" "$dir/log" "$dir/ssh" "$dir/etc"
  dir=$(cd "$dir" && pwd)
  mntns=$dir/ns/mnt

  # Network: the veth pair is the only way in.
  ip netns add "$name"
  ip link add "$veth_root" type veth peer name "$veth_host"
  ip link set "$veth_host" netns "$name"
  ip addr add "$root_addr/30" dev "$veth_root"
  ip link set "$veth_root" up
  ip -n "$name" addr add "$host_addr/30" dev "$veth_host"
  ip -n "$name" link set "$veth_host" up
  ip -n "$name" link set lo up

  # Mount namespace, kept by a bind mount of its nsfs file. The file must sit
  # on a private mount, or the bind would propagate into the namespace itself.
  mount --bind "$dir/ns" "$dir/ns"
  mount --make-private "$dir/ns"
  touch "$mntns"
  unshare --mount="$mntns" --propagation private true

  # Private libvirt configuration: the package's files without the root's
  # defined networks, pools and domains; qemu cgroups off.
  cp -a /etc/libvirt "$dir/etc/libvirt"
  find "$dir/etc/libvirt/qemu" "$dir/etc/libvirt/storage" -name '*.xml' -delete
  find "$dir/etc/libvirt/qemu" "$dir/etc/libvirt/storage" -path '*/autostart/*' -delete
  find "$dir/etc/libvirt/secrets" -mindepth 1 -delete
  sed -i '/^[[:space:]]*cgroup_controllers[[:space:]]*=/d' "$dir/etc/libvirt/qemu.conf"
  echo 'cgroup_controllers = [ ]' >>"$dir/etc/libvirt/qemu.conf"

  # sshd: its own host key and config; root by key only, on the veth address.
  ssh-keygen -q -t ed25519 -N '' -f "$dir/ssh/host_ed25519_key" -C "bootlab-remote-$name"
  install -m 0600 "$pubkey" "$dir/ssh/authorized_keys"
  cat >"$dir/ssh/sshd_config" <<EOF
ListenAddress $host_addr:22
HostKey $dir/ssh/host_ed25519_key
AuthorizedKeysFile $dir/ssh/authorized_keys
PidFile /run/sshd-bootlab.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowTcpForwarding yes
AllowStreamLocalForwarding yes
Subsystem sftp internal-sftp
# The namespace shares this machine's /root: SHLVL=1 keeps bash from
# sourcing its ~/.bashrc for each command sshd runs, as a separate host's
# dotfiles would not be this machine's.
SetEnv SHLVL=1
EOF

  # shellcheck disable=SC2016 # expanded inside, by the inner shell
  inside bash -euo pipefail -c '
    dir=$1
    # Own sysfs, so /sys/class/net shows this namespace'"'"'s devices (libvirt
    # configures bridges through it); keep the cgroup hierarchy underneath.
    mkdir -p "$dir/ns/cg"
    mount --rbind /sys/fs/cgroup "$dir/ns/cg"
    mount -t sysfs sysfs /sys
    mount --move "$dir/ns/cg" /sys/fs/cgroup
    mount -t tmpfs -o mode=0755 tmpfs /run
    mkdir -p /run/libvirt /run/sshd /run/lock
    mount --bind "$dir/etc/libvirt" /etc/libvirt
    for d in /var/lib/libvirt /var/log/libvirt /var/cache/libvirt; do
      # The package tree with its owners and modes, empty.
      skel=$(cd "$d" && find . -type d -printf "%m %u:%g %p\n")
      mount -t tmpfs -o mode=0755 tmpfs "$d"
      while read -r mode owner path; do
        mkdir -p "$d/$path" && chown "$owner" "$d/$path" && chmod "$mode" "$d/$path"
      done <<<"$skel"
    done
    for d in /var/lib/bootlab /var/lib/bootlab-e2e /var/cache/bootlab /root/.cache/bootlab; do
      # A mount point the workstation lacks is made, and removed by down.
      [[ -d $d ]] || { mkdir -p "$d" && echo "$d" >>"$dir/created"; }
      mount -t tmpfs -o mode=0755 tmpfs "$d"
    done
  ' _ "$dir"

  inside virtlogd -d -p /run/virtlogd.pid
  inside libvirtd -d -p /run/libvirtd.pid
  wait_for "libvirtd in $name" 150 inside virsh -c qemu:///system version
  inside /usr/sbin/sshd -f "$dir/ssh/sshd_config" -E "$dir/log/sshd.log"
  wait_for "sshd on $host_addr:22" 50 bash -c "exec 3<>/dev/tcp/$host_addr/22"
  {
    echo "addr=$host_addr"
    echo "root_addr=$root_addr"
    printf 'host_key=%s\n' "$(cut -d' ' -f1,2 "$dir/ssh/host_ed25519_key.pub")"
  } >"$dir/host.env"
  echo "remote host $name up: ssh root@$host_addr, libvirt qemu+ssh://root@$host_addr/system"
}

down() {
  # Every process of the host lives in its network namespace: libvirtd,
  # virtlogd, sshd and its sessions, dnsmasq, qemu, haproxy.
  if [[ -e /run/netns/$name ]]; then
    local pids
    for sig in TERM KILL; do
      pids=$(ip netns pids "$name" || true)
      [[ -n $pids ]] || break
      # shellcheck disable=SC2086 # one pid a word
      kill -s "$sig" $pids 2>/dev/null || true
      for _ in $(seq 1 25); do
        [[ -n $(ip netns pids "$name" || true) ]] || break
        sleep 0.2
      done
    done
    [[ -z $(ip netns pids "$name" || true) ]] || die "processes left in $name: $(ip netns pids "$name" | tr '\n' ' ')"
  fi
  if [[ -e $mntns ]] && mountpoint -q "$dir/ns"; then
    umount "$mntns" 2>/dev/null || true
    umount "$dir/ns"
  fi
  ip link del "$veth_root" 2>/dev/null || true
  if [[ -e /run/netns/$name ]]; then ip netns del "$name"; fi
  if [[ -f $dir/created ]]; then
    while read -r d; do rmdir "$d" 2>/dev/null || true; done <"$dir/created"
  fi
  rm -rf "${dir:?}/ns" "${dir:?}/etc" "${dir:?}/created"
}

case $cmd in
up)
  [[ $# -eq 1 ]] || usage
  up "$1"
  ;;
down)
  [[ $# -eq 0 ]] || usage
  down
  ;;
exec)
  [[ $# -ge 1 ]] || usage
  inside "$@"
  ;;
*) usage ;;
esac
