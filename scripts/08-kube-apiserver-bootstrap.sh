#!/usr/bin/env bash
# Stage 08 kube-apiserver-bootstrap: render the bootstrap kube-apiserver
#
# The kube-apiserver operator renders the bootstrap API server pod (into
# bootstrap-manifests/: cluster-bootstrap starts it in stage 13), its config,
# and the namespaces, CA bundles and signers the API must hold. From 4.22,
# when the installer enables it, the konnectivity server starts first and
# its agents' manifests join manifests/, so the bootstrap API server can
# reach webhooks on the pod network.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bootkube.sh" # bootlab: library

load_images

if konnectivity_wanted; then
    konnectivity_setup
    konnectivity_manifests
elif version_at_least 4.22; then
    if [ "${KONNECTIVITY}" = false ]; then
        echo "konnectivity is off (KONNECTIVITY=false): skipping its steps"
    else
        echo "konnectivity is off for this cluster (no ${ASSET_DIR}/konnectivity-server-pod.yaml from the installer): skipping its steps"
    fi
fi

if stage_needed kube-apiserver-bootstrap; then
    record_service_stage_start "kube-apiserver-bootstrap"
    echo "Rendering Kubernetes API server core manifests..."
    rm --recursive --force kube-apiserver-bootstrap
    KAS_FLAGS=()
    if version_at_least 4.18; then
        KAS_FLAGS+=(--operand-kubernetes-version="${KUBERNETES_VERSION}")
    fi
    bootkube_podman_run \
        --name kube-apiserver-render \
        --volume "$PWD:/assets:z" \
        "${KUBE_APISERVER_OPERATOR_IMAGE}" \
        /usr/bin/cluster-kube-apiserver-operator render \
        --manifest-etcd-serving-ca=etcd-ca-bundle.crt \
        --manifest-etcd-server-urls="${ETCD_ENDPOINTS}" \
        --manifest-image="${OPENSHIFT_HYPERKUBE_IMAGE}" \
        --manifest-operator-image="${KUBE_APISERVER_OPERATOR_IMAGE}" \
        --asset-input-dir=/assets/tls \
        --asset-output-dir=/assets/kube-apiserver-bootstrap \
        --config-output-file=/assets/kube-apiserver-bootstrap/config \
        --cluster-config-file=/assets/manifests/cluster-network-02-config.yml \
        --cluster-auth-file=/assets/manifests/cluster-authentication-02-config.yaml \
        --infra-config-file=/assets/manifests/cluster-infrastructure-02-config.yml \
        --rendered-manifest-files=/assets/manifests \
        --payload-version="${VERSION}" \
        "${KAS_FLAGS[@]}"
    cp kube-apiserver-bootstrap/config /etc/kubernetes/bootstrap-configs/kube-apiserver-config.yaml
    cp kube-apiserver-bootstrap/bootstrap-manifests/* bootstrap-manifests/
    cp kube-apiserver-bootstrap/manifests/* manifests/
    mark_done kube-apiserver-bootstrap
    record_service_stage_success
fi
