#!/usr/bin/env bash
# Stage 01 openshift-manifests: merge the installer's openshift/ manifests into manifests/
#
# bootkube's prelude makes the directories every later stage writes to; then
# the first stage copies the installer's openshift/ manifests (feature gate,
# machines, kubeadmin secret, ssh MachineConfigs) next to the others, because
# cluster-bootstrap creates everything in manifests/ through the API.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bootkube.sh" # bootlab: library

mkdir --parents /etc/kubernetes/{manifests,bootstrap-configs,bootstrap-manifests}
mkdir --parents ./{bootstrap-manifests,manifests}

if stage_needed openshift-manifests; then
    record_service_stage_start "openshift-manifests"
    echo "Moving OpenShift manifests in with the rest of them"
    cp openshift/* manifests/
    mark_done openshift-manifests
    record_service_stage_success
fi
