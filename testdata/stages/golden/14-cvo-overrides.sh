#!/usr/bin/env bash
# bootlab stage 14 cvo-overrides (script wait-for-ceo) for OpenShift 4.19.
# This is scripts/14-cvo-overrides.sh with scripts/lib/bootkube.sh inlined and its
# settings filled in; bootlab writes it to /run/bootlab/stages on the node and runs it as root.
STAGE_NUMBER=14
ASSET_DIR=/opt/openshift
OPENSHIFT_VERSION=4.19
API_URL=api.ocp.lab.local
API_INT_URL=api-int.ocp.lab.local
RELEASE_IMAGE=""
CLUSTER_PROFILE=""
BOOTLAB_FORCE=0
BOOTLAB_FORCE_THROUGH=14
SERVICE_NAME=bootkube
IMAGES_FILE=/opt/openshift/bootlab-images.env

# ---- scripts/lib/bootkube.sh ----
# (scripts/lib/bootkube.sh, inlined: checked against the source by TestDryRunGolden)

# ---- scripts/14-cvo-overrides.sh ----
# (scripts/14-cvo-overrides.sh, inlined: checked against the source by TestDryRunGolden)
