#!/usr/bin/env bash
# bootlab fixture: stands in for the installer's konnectivity-certs.sh
# (a one-day CA, server and agent certificates for the bootstrap IP).
set -euo pipefail
dir=/opt/openshift/tls/konnectivity
mkdir --parents "${dir}"
for f in ca.crt server.crt server.key agent.crt agent.key; do
    echo "fixture ${f} for ${1:?bootstrap IP}" >"${dir}/${f}"
done
echo "Generated konnectivity certificates in ${dir}"
