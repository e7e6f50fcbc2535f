#!/usr/bin/env bash
# bootlab stage 04 auth-api-bootstrap (script render-auth-api) for OpenShift 4.19.
# This is scripts/04-auth-api-bootstrap.sh with scripts/lib/bootkube.sh inlined and its
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

# ---- scripts/04-auth-api-bootstrap.sh ----
# Stage 04 auth-api-bootstrap: render the RoleBindingRestriction CRD (4.19+)
#
# The authentication operator renders one CRD early, so the
# RestrictSubjectBindings admission plugin of the bootstrap API server does
# not block the system:* RoleBindings cluster-bootstrap creates.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh

# bootlab skips this stage before 4.19; this guard does the same by hand.
if ! version_at_least 4.19; then
    echo "OpenShift ${OPENSHIFT_VERSION} has no auth-api-bootstrap step (it arrived in 4.19): skipping"
    exit 0
fi

load_images

if stage_needed auth-api-bootstrap; then
    record_service_stage_start "auth-api-bootstrap"
    echo "Rendering auth api manifests..."
    rm --recursive --force auth-api-bootstrap
    bootkube_podman_run \
        --name auth-api-render \
        --volume "$PWD:/assets:z" \
        "${AUTH_OPERATOR_IMAGE}" \
        render \
        --asset-output-dir=/assets/auth-api-bootstrap/manifests \
        --rendered-manifest-dir=/assets/manifests \
        --cluster-profile=self-managed-high-availability \
        --payload-version="${VERSION}"
    cp auth-api-bootstrap/manifests/* manifests/
    mark_done auth-api-bootstrap
    record_service_stage_success
fi
