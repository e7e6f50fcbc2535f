#!/usr/bin/env bash
# bootlab stage 06 cvo-bootstrap (script render-cvo) for OpenShift 4.19.
# This is scripts/06-cvo-bootstrap.sh with scripts/lib/bootkube.sh inlined and its
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

# ---- scripts/06-cvo-bootstrap.sh ----
# Stage 06 cvo-bootstrap: render the bootstrap cluster-version-operator pod
#
# The release image's own entrypoint is the CVO. Its render writes the
# bootstrap CVO static pod (started later by cluster-bootstrap) and the
# manifests it needs; the pod reads /etc/kubernetes/kubeconfig.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh

load_images

if stage_needed cvo-bootstrap; then
    record_service_stage_start "cvo-bootstrap"
    echo "Rendering Cluster Version Operator Manifests..."
    rm --recursive --force cvo-bootstrap
    CVO_ENV=()
    if [ -n "${CLUSTER_PROFILE}" ]; then
        CVO_ENV=(--env "CLUSTER_PROFILE=${CLUSTER_PROFILE}")
    fi
    CVO_FLAGS=()
    if version_at_least 4.18; then
        CVO_FLAGS+=(--feature-gate-manifest-path=/assets/manifests/99_feature-gate.yaml)
    fi
    bootkube_podman_run \
        --name cvo-render \
        --volume "$PWD:/assets:z" \
        "${CVO_ENV[@]}" \
        "${RELEASE_IMAGE_DIGEST}" \
        render \
        --output-dir=/assets/cvo-bootstrap \
        --release-image="${RELEASE_IMAGE_DIGEST}" \
        "${CVO_FLAGS[@]}"
    cp cvo-bootstrap/bootstrap/* bootstrap-manifests/
    cp cvo-bootstrap/manifests/* manifests/
    # The bootstrap CVO pod mounts this loopback kubeconfig.
    cp auth/kubeconfig-loopback /etc/kubernetes/kubeconfig
    mark_done cvo-bootstrap
    record_service_stage_success
fi
