#!/usr/bin/env bash
# bootlab stage 11 ingress-operator-bootstrap (script render-ingress-node-tuning) for OpenShift 4.19.
# This is scripts/11-ingress-operator-bootstrap.sh with scripts/lib/bootkube.sh inlined and its
# settings filled in; bootlab writes it to /run/bootlab/stages on the node and runs it as root.
ASSET_DIR=/opt/openshift
OPENSHIFT_VERSION=4.19
API_URL=api.ocp.lab.local
API_INT_URL=api-int.ocp.lab.local
RELEASE_IMAGE=""
CLUSTER_PROFILE=""
BOOTLAB_FORCE=0
SERVICE_NAME=bootkube
IMAGES_FILE=/opt/openshift/bootlab-images.env

# ---- scripts/lib/bootkube.sh ----
# (scripts/lib/bootkube.sh, inlined verbatim without its #! line: checked by TestDryRunGolden)

# ---- scripts/11-ingress-operator-bootstrap.sh ----
# Stage 11 ingress-operator-bootstrap and node-tuning-bootstrap renders
#
# The ingress operator renders its CRD and namespace so the installer's
# default IngressController can be created early; the node tuning operator
# renders manifests only when PerformanceProfile-style input is present.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh

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
        --name nto-render \
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
