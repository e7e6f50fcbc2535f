#!/usr/bin/env bash
# Stage 03 api-bootstrap: render the openshift/api CRDs and resolve feature gates
#
# The cluster-config-api image renders the CRDs of openshift/api for this
# feature set and profile, and rewrites manifests/99_feature-gate.yaml in
# place with the gates resolved for the payload version: later renders read it.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bootkube.sh" # bootlab: library

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
