#!/usr/bin/env bash
# bootlab stage 01 openshift-manifests (script move-manifests) for OpenShift 4.19.
# This is scripts/01-openshift-manifests.sh with scripts/lib/bootkube.sh inlined and its
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

# ---- scripts/01-openshift-manifests.sh ----
# Stage 01 openshift-manifests: merge the installer's openshift/ manifests into manifests/
#
# bootkube's prelude makes the directories every later stage writes to; then
# the first stage copies the installer's openshift/ manifests (feature gate,
# machines, kubeadmin secret, ssh MachineConfigs) next to the others, because
# cluster-bootstrap creates everything in manifests/ through the API.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh

mkdir --parents /etc/kubernetes/{manifests,bootstrap-configs,bootstrap-manifests}
mkdir --parents ./{bootstrap-manifests,manifests}

if stage_needed openshift-manifests; then
    record_service_stage_start "openshift-manifests"
    echo "Moving OpenShift manifests in with the rest of them"
    cp openshift/* manifests/
    mark_done openshift-manifests
    record_service_stage_success
fi
