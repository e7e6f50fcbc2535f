#!/usr/bin/env bash
# virsh-lab.sh: the plain-bash baseline of `make bench`. It builds (up) or
# deletes (down) the same libvirt objects as `bootlab lab up|down` for a
# six-node probe lab: an isolated network with DHCP reservations and DNS
# records, a dir pool, the base image uploaded into it, six qcow2 overlays,
# haproxy, and six domains, all started, one virsh call at a time, as a shell
# script would.
#
# usage: virsh-lab.sh up|down NAME CIDR_PREFIX(e.g. 10.215.9) WORKDIR KERNEL INITRD CMDLINE BASE_IMAGE IGNITION_DIR
set -euo pipefail

action=$1 name=$2 net=$3 work=$4 kernel=$5 initrd=$6 cmdline=$7 base=$8 igndir=$9
uri=qemu:///system
v() { virsh -q -c "$uri" "$@" >/dev/null; }
lab=bench-sh-$name
pool_dir=$work/pool
nodes=(bootstrap master-0 master-1 master-2 worker-0 worker-1)
ips=(10 11 12 13 20 21)
roles=(bootstrap master master master worker worker)
mac() { printf '52:54:00:bb:%02x:%02x' "$((${#name} % 256))" "$1"; }

up() {
  mkdir -p "$work/console" "$work/haproxy"
  local hosts="" dns=""
  for i in "${!nodes[@]}"; do
    hosts+="<host mac='$(mac "$i")' name='${nodes[$i]}' ip='$net.${ips[$i]}'/>"
    dns+="<host ip='$net.${ips[$i]}'><hostname>${nodes[$i]}.ocp.lab.local</hostname></host>"
  done
  cat >"$work/net.xml" <<XML
<network xmlns:dnsmasq='http://libvirt.org/schemas/network/dnsmasq/1.0'>
  <name>$lab</name>
  <bridge name='bs${name:0:8}' stp='on' delay='0'/>
  <domain name='ocp.lab.local' localOnly='yes'/>
  <dns><host ip='$net.1'><hostname>api.ocp.lab.local</hostname><hostname>api-int.ocp.lab.local</hostname></host>$dns</dns>
  <ip address='$net.1' prefix='24'><dhcp><range start='$net.128' end='$net.254'/>$hosts</dhcp></ip>
  <dnsmasq:options><dnsmasq:option value='address=/apps.ocp.lab.local/$net.1'/></dnsmasq:options>
</network>
XML
  v net-define "$work/net.xml"
  v net-autostart "$lab"
  v net-start "$lab"

  v pool-define-as "$lab" dir --target "$pool_dir"
  v pool-build "$lab"
  v pool-start "$lab"
  v pool-autostart "$lab"
  local size
  size=$(stat -c %s "$base")
  v vol-create-as "$lab" base.qcow2 "$size" --format qcow2
  v vol-upload --pool "$lab" base.qcow2 "$base"
  for n in "${nodes[@]}"; do
    v vol-create-as "$lab" "$n.qcow2" 1G --format qcow2 --backing-vol "$pool_dir/base.qcow2" --backing-vol-format qcow2
  done

  cat >"$work/haproxy/haproxy.cfg" <<CFG
global
  daemon
  pidfile $work/haproxy/haproxy.pid
defaults
  mode tcp
  timeout connect 5s
  timeout client 1m
  timeout server 1m
frontend api
  bind $net.1:6443
  default_backend api
backend api
  server bootstrap $net.10:6443 check
  server master-0 $net.11:6443 check
  server master-1 $net.12:6443 check
  server master-2 $net.13:6443 check
frontend mcs
  bind $net.1:22623
  default_backend mcs
backend mcs
  server bootstrap $net.10:22623 check
  server master-0 $net.11:22623 check
  server master-1 $net.12:22623 check
  server master-2 $net.13:22623 check
frontend http
  bind $net.1:80
  default_backend http
backend http
  server worker-0 $net.20:80 check
  server worker-1 $net.21:80 check
frontend https
  bind $net.1:443
  default_backend https
backend https
  server worker-0 $net.20:443 check
  server worker-1 $net.21:443 check
CFG
  haproxy -c -q -f "$work/haproxy/haproxy.cfg"
  haproxy -f "$work/haproxy/haproxy.cfg"

  for i in "${!nodes[@]}"; do
    local n=${nodes[$i]}
    cat >"$work/$n.xml" <<XML
<domain type='qemu'>
  <name>$lab-$n</name>
  <metadata><lab xmlns='https://bootlab.dev/xmlns/bench/v1' name='$name' role='${roles[$i]}'/></metadata>
  <memory unit='MiB'>256</memory>
  <vcpu>1</vcpu>
  <sysinfo type='fwcfg'><entry name='opt/com.coreos/config' file='$igndir/$n.ign'/></sysinfo>
  <os><type arch='x86_64' machine='q35'>hvm</type><kernel>$kernel</kernel><initrd>$initrd</initrd><cmdline>$cmdline</cmdline></os>
  <features><acpi/><apic/></features>
  <devices>
    <disk type='volume' device='disk'><driver name='qemu' type='qcow2'/><source pool='$lab' volume='$n.qcow2'/><target dev='vda' bus='virtio'/></disk>
    <interface type='network'><mac address='$(mac "$i")'/><source network='$lab'/><model type='virtio'/></interface>
    <serial type='pty'><log file='$work/console/$n.log' append='on'/><target port='0'/></serial>
    <console type='pty'><target type='serial' port='0'/></console>
    <memballoon model='none'/>
  </devices>
</domain>
XML
    v define "$work/$n.xml"
    v start "$lab-$n"
  done
}

down() {
  for n in "${nodes[@]}"; do
    virsh -q -c "$uri" destroy "$lab-$n" >/dev/null 2>&1 || true
    v undefine "$lab-$n"
  done
  if [[ -f $work/haproxy/haproxy.pid ]]; then
    kill "$(cat "$work/haproxy/haproxy.pid")" 2>/dev/null || true
  fi
  for n in "${nodes[@]}"; do
    v vol-delete --pool "$lab" "$n.qcow2"
  done
  v vol-delete --pool "$lab" base.qcow2
  v pool-destroy "$lab"
  v pool-delete "$lab"
  v pool-undefine "$lab"
  v net-destroy "$lab"
  v net-undefine "$lab"
  rm -rf "$work/console" "$work/haproxy" "$work"/*.xml
}

"$action"
