#!/usr/bin/env bash
# bootlab stage 07 etcd-bootstrap (script render-etcd) for OpenShift 4.19.
# This is scripts/07-etcd-bootstrap.sh with scripts/lib/bootkube.sh inlined and its
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

# ---- scripts/07-etcd-bootstrap.sh ----
# Stage 07 etcd-bootstrap: render etcd and start the bootstrap etcd member
#
# The cluster-etcd-operator renders the etcd static pod, its certificates and
# the etcd client certificate. The copy into /etc/kubernetes is what starts
# etcd: the kubelet watches /etc/kubernetes/manifests.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh

load_images

if stage_needed etcd-bootstrap; then
    record_service_stage_start "etcd-bootstrap"
    echo "Rendering CEO Manifests..."
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
