#!/usr/bin/env bash
# Prepare a Debian/Ubuntu host for bootlab: install what is missing, give the
# qemu user access to /dev/kvm, and start virtlogd and libvirtd when no init
# system runs them. Safe to run again. Run as root.
set -euo pipefail

packages=(
  libvirt-daemon-system libvirt-clients qemu-system-x86 qemu-utils
  dnsmasq-base haproxy iproute2 dnsutils cpio curl jq gettext-base
  openssh-client openssh-server shellcheck ca-certificates sudo util-linux
  openssl
  chromium # headless, for the dashboard e2e test (test/e2e/dashboard_e2e_test.go)
)

if [[ $(id -u) -ne 0 ]]; then
  echo "setup.sh: run as root (sudo $0)" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
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
  pgrep -x libvirtd >/dev/null || libvirtd -d
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
