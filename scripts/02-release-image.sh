#!/usr/bin/env bash
# Stage 02 release-image: component images, VERSION and (4.18+) KUBERNETES_VERSION
#
# bootkube asks the release payload for the pull spec of every operator it
# runs (image_for), and oc for the release version (and, from 4.18, the
# Kubernetes version), before the first render. bootlab does it once and
# keeps the answers in bootlab-images.env; bootkube has no marker for this,
# so neither do we. This is not release-image.service, which pulls the
# release image before bootkube starts.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bootkube.sh" # bootlab: library

echo "Resolving component images from ${RELEASE_IMAGE_DIGEST}..."
resolve_images
# shellcheck disable=SC1090
. "${IMAGES_FILE}"
echo "VERSION=${VERSION}"
if version_at_least 4.18; then
    echo "KUBERNETES_VERSION=${KUBERNETES_VERSION}"
fi
for pair in "${IMAGE_VARIABLES[@]}"; do
    var=${pair%%=*}
    echo "${var}=${!var}"
done
