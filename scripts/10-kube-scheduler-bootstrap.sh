#!/usr/bin/env bash
# Stage 10 kube-scheduler-bootstrap: render the bootstrap scheduler
#
# The scheduler operator renders the bootstrap scheduler pod and config.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bootkube.sh" # bootlab: library

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
