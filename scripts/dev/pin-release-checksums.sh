#!/usr/bin/env bash
# Fill lab/release/checksums.txt (make pin-checksums): for each artefact
# whose checksum is "-", fetch the project's own checksum file and write the
# sha256 in its place. Kubernetes publishes <name>.sha256 beside each binary
# on dl.k8s.io; etcd publishes SHA256SUMS beside its release tarballs. A
# pinned line is left as it is; with --check, each pinned one is fetched
# again and any difference fails the run (nothing is written then).
#
# It needs those two sites, so it is a maintainer's step on a host with
# internet: never run by the tests or CI. Review the diff, then commit it.
#
# usage: pin-release-checksums.sh [--check] [FILE]
set -euo pipefail

check=false
if [ "${1:-}" = "--check" ]; then check=true; shift; fi
file=${1:-lab/release/checksums.txt}
kube_site=${BOOTLAB_KUBERNETES_RELEASES_URL:-https://dl.k8s.io/release}
etcd_site=${BOOTLAB_ETCD_RELEASES_URL:-https://github.com/etcd-io/etcd/releases/download}

[ -f "${file}" ] || { echo "${file}: not found (run from the repository's root)" >&2; exit 2; }

fetch() { curl -fsSL --retry 3 --max-time 60 "$1"; }

# official_sum KEY prints the project's sha256 of the artefact KEY
# (kubernetes/<path> or etcd/v<version>/<tarball>).
official_sum() {
  local key=$1 path sum
  case "${key}" in
    kubernetes/*)
      path=${key#kubernetes/}
      sum=$(fetch "${kube_site}/${path}.sha256" | awk '{print $1; exit}') ;;
    etcd/*)
      path=${key#etcd/}
      sum=$(fetch "${etcd_site}/${path%/*}/SHA256SUMS" | awk -v f="${path##*/}" '$2 == f || $2 == "*"f {print $1; exit}') ;;
    *)
      echo "${key}: not a kubernetes/ or etcd/ artefact" >&2; return 1 ;;
  esac
  if ! [[ "${sum}" =~ ^[0-9a-f]{64}$ ]]; then
    echo "${key}: the project's checksum file gave '${sum}', not a sha256" >&2
    return 1
  fi
  echo "${sum}"
}

tmp=$(mktemp "${file}.XXXXXX")
trap 'rm -f "${tmp}"' EXIT
filled=0 differ=0
while IFS= read -r line || [ -n "${line}" ]; do
  case "${line}" in
    ''|'#'*) echo "${line}" >>"${tmp}"; continue ;;
  esac
  sum=${line%%  *} key=${line#*  }
  if [ "${sum}" = "-" ]; then
    sum=$(official_sum "${key}")
    echo "pinned ${key} ${sum}" >&2
    filled=$((filled + 1))
  elif ${check}; then
    got=$(official_sum "${key}")
    if [ "${got}" != "${sum}" ]; then
      echo "${key}: pinned ${sum}, the project now publishes ${got}" >&2
      differ=$((differ + 1))
    fi
  fi
  echo "${sum}  ${key}" >>"${tmp}"
done <"${file}"

if [ "${differ}" -gt 0 ]; then
  echo "${differ} pinned checksum(s) differ from the projects' own: ${file} left as it was; find out why before changing a pin" >&2
  exit 1
fi
chmod 0644 "${tmp}"
mv "${tmp}" "${file}"
trap - EXIT
echo "${filled} checksum(s) pinned in ${file}; review with git diff, run go test ./lab/release/, commit" >&2
