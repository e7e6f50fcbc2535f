#!/usr/bin/env bash
# Stage 07 etcd-bootstrap: render etcd and start the bootstrap etcd member
#
# The cluster-etcd-operator renders the etcd static pod, its certificates and
# the etcd client certificate. The copy into /etc/kubernetes is what starts
# etcd: the kubelet watches /etc/kubernetes/manifests.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bootkube.sh" # bootlab: library

load_images

if stage_needed etcd-bootstrap; then
    record_service_stage_start "etcd-bootstrap"
    echo "Rendering CEO Manifests..."
    # A rerun must not keep the per-host certificates of an earlier render.
    rm --recursive --force etcd-bootstrap
    bootkube_podman_run \
        --name etcd-render \
        --volume "$PWD:/assets:z" \
        "${CLUSTER_ETCD_OPERATOR_IMAGE}" \
        /usr/bin/cluster-etcd-operator render \
        --asset-output-dir=/assets/etcd-bootstrap \
        --cluster-configmap-file=/assets/manifests/cluster-config.yaml \
        --etcd-image="${MACHINE_CONFIG_ETCD_IMAGE}" \
        --infra-config-file=/assets/manifests/cluster-infrastructure-02-config.yml \
        --network-config-file=/assets/manifests/cluster-network-02-config.yml
    # The static pod and its certificates: etcd starts as soon as this lands.
    cp --recursive etcd-bootstrap/etc-kubernetes/* /etc/kubernetes/
    # Secrets and config maps for the bootstrap API server to create.
    cp etcd-bootstrap/manifests/* manifests/
    # The CA bundle and client certificate the API server and etcdctl use.
    cp etcd-bootstrap/tls/* tls/
    mark_done etcd-bootstrap
    record_service_stage_success
fi
