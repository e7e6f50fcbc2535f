#!/usr/bin/env bash
# Stage 11 ingress-operator-bootstrap and node-tuning-bootstrap renders
#
# The ingress operator renders its CRD and namespace so the installer's
# default IngressController can be created early; the node tuning operator
# renders manifests only when PerformanceProfile-style input is present.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bootkube.sh" # bootlab: library

load_images

if stage_needed ingress-operator-bootstrap; then
    record_service_stage_start "ingress-operator-bootstrap"
    echo "Rendering Ingress Operator core manifests..."
    # bootkube removes ingress-operator-bootstrap but writes
    # ingress-operator-manifests: the same quirk here.
    rm --recursive --force ingress-operator-bootstrap
    bootkube_podman_run \
        --name ingress-render \
        --volume "$PWD:/assets:z" \
        "${INGRESS_OPERATOR_IMAGE}" \
        render \
        --prefix=cluster-ingress- \
        --output-dir=/assets/ingress-operator-manifests
    cp ingress-operator-manifests/* manifests/
    mark_done ingress-operator-bootstrap
    record_service_stage_success
fi

if stage_needed node-tuning-bootstrap; then
    record_service_stage_start "node-tuning-bootstrap"
    echo "Rendering Node Tuning core manifests..."
    rm --recursive --force node-tuning-bootstrap
    bootkube_podman_run \
        --name node-tuning-render \
        --volume "$PWD:/assets:z" \
        "${NODE_TUNING_OPERATOR_IMAGE}" \
        render \
        --asset-input-dir=/assets/manifests \
        --asset-output-dir=/assets/node-tuning-bootstrap
    if [ -n "$(ls -A node-tuning-bootstrap 2>/dev/null)" ]; then
        cp node-tuning-bootstrap/* manifests/
    fi
    mark_done node-tuning-bootstrap
    record_service_stage_success
fi
