#!/usr/bin/env bash
# Prepare a Debian/Ubuntu host for bootlab: install what is missing, give the
# qemu user access to /dev/kvm, and start virtlogd and libvirtd when no init
# system runs them. Safe to run again. Run as root. --test adds what the
# tests need (make test-all and .ci/run use it; make demo does not).
set -euo pipefail

usage() {
  echo "usage: $0 [--test]" >&2
  echo "  (no flag)  the packages a lab needs: libvirt, QEMU, dnsmasq, haproxy" >&2
  echo "  --test     also what the tests need (make test-all, .ci/run): sshd, shellcheck, chromium, ..." >&2
}

# What a lab needs on the host: libvirtd and QEMU to run the VMs, dnsmasq
# (libvirt's DHCP and DNS), haproxy (the lab's load balancer), qemu-img.
packages=(
  libvirt-daemon-system libvirt-clients qemu-system-x86 qemu-utils
  dnsmasq-base haproxy iproute2 ca-certificates
)
# What only the tests need: a learner's laptop does without them.
test_packages=(
  dnsutils cpio curl jq gettext-base openssl util-linux sudo xz-utils
  openssh-client openssh-server # sshd on loopback: the stage and remote-host tests
  shellcheck                    # make lint
  chromium # headless, for the dashboard's browser test (test/e2e/dashboard_e2e_test.go)
)

case "${1:-}" in
  "") ;;
  --test)
    packages+=("${test_packages[@]}")
    # Ubuntu has no chromium package, only chromium-browser, a stub that
    # installs the snap (snapd must run): the browser test needs the snap.
    if grep -qx 'ID=ubuntu' /etc/os-release 2>/dev/null; then
      packages=("${packages[@]/chromium/}")
      command -v chromium >/dev/null ||
        echo "setup.sh: Ubuntu's chromium is a snap: snap install chromium (the dashboard browser test runs /snap/bin/chromium)" >&2
    fi
    ;;
  -h | --help)
    usage
    exit 0
    ;;
  *)
    usage
    exit 2
    ;;
esac
# Without systemd, libvirtd runs under tini (below).
if [[ ! -d /run/systemd/system ]]; then
  packages+=(tini)
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "setup.sh: run as root (sudo $0)" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  [[ -n $p ]] || continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The probe image builders fetch Debian packages with apt-get download,
# which needs package lists even when every package here is installed.
lists=(/var/lib/apt/lists/*_Packages*)
if ((${#missing[@]})) || [[ ! -e ${lists[0]} ]]; then
  apt-get update -qq
fi
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's normal /dev/kvm is root:kvm 0660. Where it is root-only, libvirtd
# sees KVM as root but not as the qemu user, re-probes qemu on every start and
# each domain takes about a minute to start.
if [[ -e /dev/kvm ]]; then
  chgrp kvm /dev/kvm && chmod 0660 /dev/kvm
fi

# Without systemd (containers, CI) the daemons are started by hand.
if [[ ! -d /run/systemd/system ]]; then
  mkdir -p /run/libvirt
  pgrep -x virtlogd >/dev/null || virtlogd -d
  # libvirt daemonizes each QEMU, so a QEMU that exits is reaped by
  # libvirtd's nearest subreaper, PID 1 unless one is set, and libvirt's
  # destroy waits until the zombie is gone. Without systemd, PID 1 (a
  # container's entry command, a sandbox's init) may reap late or never:
  # on the CI machine every destroy waited 1.7 s for it, and where PID 1
  # never reaps a destroy fails after 15 s. tini -s reaps at once.
  if ! pgrep -x libvirtd >/dev/null; then
    mkdir -p /var/log/libvirt
    setsid -f tini -s -- libvirtd </dev/null >>/var/log/libvirt/libvirtd-stderr.log 2>&1
  elif [[ $(ps -o comm= -p "$(ps -o ppid= -p "$(pgrep -xo libvirtd)" | tr -d ' ')") != tini ]]; then
    echo "setup.sh: libvirtd already runs, not under tini: if stopping a VM (virsh destroy, lab down) is slow, stop libvirtd while no VM runs and run this again" >&2
  fi
else
  systemctl start virtlogd.socket libvirtd.service
fi

for _ in $(seq 1 30); do
  if virsh -c qemu:///system version >/dev/null 2>&1; then
    echo "libvirt ready: $(virsh -c qemu:///system version | sed -n 's/^Running hypervisor: //p')"
    exit 0
  fi
  sleep 1
done
echo "setup.sh: libvirtd did not answer on qemu:///system within 30 s" >&2
exit 1
