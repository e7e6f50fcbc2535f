#!/usr/bin/env bash
# Stage 02 release-image: component images, VERSION and KUBERNETES_VERSION
#
# bootkube asks the release payload for the pull spec of every operator it
# runs (image_for), and oc for the release and Kubernetes versions, before
# the first render. bootlab does it once and keeps the answers in
# bootlab-images.env; bootkube has no marker for this, so neither do we.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bootkube.sh" # bootlab: library

echo "Resolving component images from ${RELEASE_IMAGE_DIGEST}..."
resolve_images
# shellcheck disable=SC1090
. "${IMAGES_FILE}"
echo "VERSION=${VERSION}"
echo "KUBERNETES_VERSION=${KUBERNETES_VERSION}"
for pair in "${IMAGE_VARIABLES[@]}"; do
    var=${pair%%=*}
    echo "${var}=${!var}"
done
