#!/usr/bin/env bash
# Stage 14 cvo-overrides and wait-for-ceo: hand the cluster back to its operators
#
# Removes the bootstrap konnectivity server and agents (4.22+, when on),
# restores the CVO overrides the installer set aside for bootstrap, stops
# the bootstrap MCS, and waits for the etcd operator to run etcd on the masters.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bootkube.sh" # bootlab: library

load_images

if konnectivity_wanted; then
    konnectivity_cleanup
fi

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
