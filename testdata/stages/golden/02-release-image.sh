#!/usr/bin/env bash
# bootlab stage 02 release-image (script image-for) for OpenShift 4.19.
# This is scripts/02-release-image.sh with scripts/lib/bootkube.sh inlined and its
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

# ---- scripts/02-release-image.sh ----
# Stage 02 release-image: component images, VERSION and KUBERNETES_VERSION
#
# bootkube asks the release payload for the pull spec of every operator it
# runs (image_for), and oc for the release and Kubernetes versions, before
# the first render. bootlab does it once and keeps the answers in
# bootlab-images.env; bootkube has no marker for this, so neither do we.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh

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
