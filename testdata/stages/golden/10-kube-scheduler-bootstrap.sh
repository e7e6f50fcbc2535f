#!/usr/bin/env bash
# bootlab stage 10 kube-scheduler-bootstrap (script render-kube-scheduler) for OpenShift 4.19.
# This is scripts/10-kube-scheduler-bootstrap.sh with scripts/lib/bootkube.sh inlined and its
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

# ---- scripts/10-kube-scheduler-bootstrap.sh ----
# Stage 10 kube-scheduler-bootstrap: render the bootstrap scheduler
#
# The scheduler operator renders the bootstrap scheduler pod and config.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh

load_images

if stage_needed kube-scheduler-bootstrap; then
    record_service_stage_start "kube-scheduler-bootstrap"
    echo "Rendering Kubernetes Scheduler core manifests..."
    rm --recursive --force kube-scheduler-bootstrap
    bootkube_podman_run \
        --name kube-scheduler-render \
        --volume "$PWD:/assets:z" \
        "${KUBE_SCHEDULER_OPERATOR_IMAGE}" \
        /usr/bin/cluster-kube-scheduler-operator render \
        --manifest-image="${OPENSHIFT_HYPERKUBE_IMAGE}" \
        --asset-input-dir=/assets/tls \
        --asset-output-dir=/assets/kube-scheduler-bootstrap \
        --config-output-file=/assets/kube-scheduler-bootstrap/config
    cp kube-scheduler-bootstrap/config /etc/kubernetes/bootstrap-configs/kube-scheduler-config.yaml
    cp kube-scheduler-bootstrap/bootstrap-manifests/* bootstrap-manifests/
    cp kube-scheduler-bootstrap/manifests/* manifests/
    mark_done kube-scheduler-bootstrap
    record_service_stage_success
fi
