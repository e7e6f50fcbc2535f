#!/usr/bin/env bash
# bootlab stage 03 api-bootstrap (script render-api) for OpenShift 4.19.
# This is scripts/03-api-bootstrap.sh with scripts/lib/bootkube.sh inlined and its
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

# ---- scripts/03-api-bootstrap.sh ----
# Stage 03 api-bootstrap: render the openshift/api CRDs and resolve feature gates
#
# The cluster-config-api image renders the CRDs of openshift/api for this
# feature set and profile, and rewrites manifests/99_feature-gate.yaml in
# place with the gates resolved for the payload version: later renders read it.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh

load_images

if stage_needed api-bootstrap; then
    record_service_stage_start "api-bootstrap"
    echo "Rendering api manifests..."
    rm --recursive --force api-bootstrap
    bootkube_podman_run \
        --name api-render \
        --volume "$PWD:/assets:z" \
        "${API_IMAGE}" \
        /usr/bin/render \
        --asset-output-dir=/assets/api-bootstrap \
        --rendered-manifest-dir=/assets/manifests \
        --cluster-profile=self-managed-high-availability \
        --payload-version="${VERSION}"
    cp api-bootstrap/manifests/* manifests/
    mark_done api-bootstrap
    record_service_stage_success
fi
