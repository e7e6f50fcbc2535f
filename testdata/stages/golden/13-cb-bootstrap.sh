#!/usr/bin/env bash
# bootlab stage 13 cb-bootstrap (script start-bootstrap) for OpenShift 4.19.
# This is scripts/13-cb-bootstrap.sh with scripts/lib/bootkube.sh inlined and its
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

# ---- scripts/13-cb-bootstrap.sh ----
# Stage 13 cb-bootstrap: wait for etcd, then cluster-bootstrap start
#
# Waits for the bootstrap etcd member, then runs cluster-bootstrap: it copies
# bootstrap-manifests/ into /etc/kubernetes/manifests (the temporary control
# plane starts), creates everything in manifests/ through the API, waits for
# the masters' own control plane, and tears the temporary one down.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh

load_images
BOOTSTRAP_INPLACE=false

# bootkube has no marker for this wait: it runs on every start (except after
# a single-node install stopped etcd).
if [ ! -f stop-etcd.done ]; then
    record_service_stage_start "wait-for-etcd"
    wait_for_etcd_cluster
    record_service_stage_success
fi

REQUIRED_PODS="openshift-kube-apiserver/kube-apiserver,openshift-kube-scheduler/openshift-kube-scheduler,openshift-kube-controller-manager/kube-controller-manager,openshift-cluster-version/cluster-version-operator"
if [ "${BOOTSTRAP_INPLACE}" = true ]; then
    REQUIRED_PODS=""
fi

echo "Starting cluster-bootstrap..."
if stage_needed cb-bootstrap; then
    record_service_stage_start "cb-bootstrap"
    if bootkube_podman_run \
        --name cluster-bootstrap \
        --volume "$PWD:/assets:z" \
        --volume /etc/kubernetes:/etc/kubernetes:z \
        "${CLUSTER_BOOTSTRAP_IMAGE}" \
        start --tear-down-early=false --asset-dir=/assets --required-pods="${REQUIRED_PODS}"; then
        mark_done cb-bootstrap
        record_service_stage_success
    else
        ret=$?
        # Like bootkube: collect what the temporary API server knew, then fail.
        if [ -f /usr/local/bin/bootstrap-cluster-gather.sh ]; then
            set +u
            # shellcheck disable=SC1091
            . /usr/local/bin/bootstrap-cluster-gather.sh
            cluster_bootstrap_gather || true
        fi
        exit "${ret}"
    fi
fi
