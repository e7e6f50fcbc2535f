#!/usr/bin/env bash
# bootlab stage 14 cvo-overrides (script wait-for-ceo) for OpenShift 4.19.
# This is scripts/14-cvo-overrides.sh with scripts/lib/bootkube.sh inlined and its
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

# ---- scripts/14-cvo-overrides.sh ----
# Stage 14 cvo-overrides and wait-for-ceo: hand the cluster back to its operators
#
# Restores the CVO overrides the installer set aside for bootstrap, stops the
# bootstrap MCS, and waits for the etcd operator to run etcd on the masters.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh

load_images

if stage_needed cvo-overrides; then
    record_service_stage_start "cvo-overrides"
    echo "Restoring CVO overrides"
    until oc patch clusterversion.config.openshift.io version \
        --kubeconfig=/opt/openshift/auth/kubeconfig \
        --type=merge \
        --patch-file=/opt/openshift/original_cvo_overrides.patch; do
        echo "Trying again to restore CVO overrides"
        sleep 10
    done
    mark_done cvo-overrides
    record_service_stage_success
fi

# The bootstrap MCC and MCS stop here: the masters serve Ignition from now on.
rm --force /etc/kubernetes/manifests/machineconfigoperator-bootstrap-pod.yaml

# No marker: bootkube waits again on every start until .bootkube.done.
record_service_stage_start "wait-for-ceo"
echo "Waiting for CEO to finish..."
bootkube_podman_run \
    --name wait-for-ceo \
    --volume "$PWD:/assets:z" \
    "${CLUSTER_ETCD_OPERATOR_IMAGE}" \
    /usr/bin/cluster-etcd-operator \
    wait-for-ceo \
    --kubeconfig /assets/auth/kubeconfig
record_service_stage_success
