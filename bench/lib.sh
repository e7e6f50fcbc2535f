# lib.sh: what every `make bench` script starts with. Sourced, not run.
# shellcheck shell=bash

die() { echo "bench: $*" >&2; exit 1; }

# need_root BOOTLAB refuses to run unless root and BOOTLAB is built.
need_root() {
  [[ $(id -u) == 0 ]] || die "run as root (it creates libvirt networks and VMs on qemu:///system)"
  [[ -x $1 ]] || die "$1 not built: run make build"
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
