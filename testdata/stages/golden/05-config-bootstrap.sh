#!/usr/bin/env bash
# bootlab stage 05 config-bootstrap (script render-config) for OpenShift 4.19.
# This is scripts/05-config-bootstrap.sh with scripts/lib/bootkube.sh inlined and its
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

# ---- scripts/05-config-bootstrap.sh ----
# Stage 05 config-bootstrap: render the cluster config (cluster-config-operator)
#
# Produces the generated cloud-provider config and the config file the later
# renders and the MCO read. Since 4.15 it renders no manifests of its own.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh

load_images

if stage_needed config-bootstrap; then
    record_service_stage_start "config-bootstrap"
    echo "Rendering cluster config manifests..."
    rm --recursive --force config-bootstrap
    CONFIG_FLAGS=()
    if [ -f "$PWD/manifests/cloud-provider-config.yaml" ]; then
        CONFIG_FLAGS+=(--cloud-provider-config-input-file=/assets/manifests/cloud-provider-config.yaml)
    fi
    bootkube_podman_run \
        --name config-render \
        --volume "$PWD:/assets:z" \
        "${CONFIG_OPERATOR_IMAGE}" \
        /usr/bin/cluster-config-operator render \
        --skip-api-rendering \
        --cluster-infrastructure-input-file=/assets/manifests/cluster-infrastructure-02-config.yml \
        --cloud-provider-config-output-file=/assets/config-bootstrap/cloud-provider-config-generated.yaml \
        --config-output-file=/assets/config-bootstrap/config \
        --asset-input-dir=/assets/tls \
        --asset-output-dir=/assets/config-bootstrap \
        --rendered-manifest-files=/assets/manifests \
        --payload-version="${VERSION}" \
        "${CONFIG_FLAGS[@]}"
    mark_done config-bootstrap
    record_service_stage_success
fi
