#!/usr/bin/env bash
# Stage 06 cvo-bootstrap: render the bootstrap cluster-version-operator pod
#
# The release image's own entrypoint is the CVO. Its render writes the
# bootstrap CVO static pod (started later by cluster-bootstrap) and the
# manifests it needs; the pod reads /etc/kubernetes/kubeconfig.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bootkube.sh" # bootlab: library

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
    # 4.17+: render the manifests of the cluster's feature set (installer #8813).
    if version_at_least 4.17; then
        CVO_FLAGS+=(--feature-gate-manifest-path=/assets/manifests/99_feature-gate.yaml)
    fi
    # 4.22+: render against the installer's ClusterVersion (installer #10295).
    if version_at_least 4.22; then
        CVO_FLAGS+=(--cluster-version-manifest-path=/assets/manifests/cvo-overrides.yaml)
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
