#!/usr/bin/env bash
# Stage 12 mco-bootstrap: render the MCO and start the bootstrap Machine Config Server
#
# The MCO renders the pools, the controller config and its bootstrap pod.
# Copying the pod into /etc/kubernetes/manifests starts the bootstrap MCC and
# the MCS on port 22623, which serves the masters their Ignition. Then the
# API names are checked (never fatal) and the cloud credential operator
# renders its bootstrap pod.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bootkube.sh" # bootlab: library

load_images

if stage_needed mco-bootstrap; then
    record_service_stage_start "mco-bootstrap"
    echo "Rendering MCO manifests..."
    rm --recursive --force mco-bootstrap
    MCO_FLAGS=()
    if [ -f /opt/openshift/tls/cloud-ca-cert.pem ]; then
        MCO_FLAGS+=(--cloud-provider-ca-file=/assets/tls/cloud-ca-cert.pem)
    fi
    if [ -f "$PWD/manifests/cloud-provider-config.yaml" ]; then
        MCO_FLAGS+=(--cloud-config-file=/assets/config-bootstrap/cloud-provider-config-generated.yaml)
    fi
    # Cluster-hosted DNS on a cloud: the load balancers' addresses. Upstream
    # tests one name and passes another (since installer d890032ba6, 2023-11-01; 4.16-4.19
    # read); the installer writes neither in manifests/ (only
    # openshift/openshift-lb-config.yaml), so the flag is dormant. Kept as
    # upstream has it: a replay must not fix what the node's bootkube.sh does.
    if [ -f "$PWD/manifests/openshift-lbconfig-custom-dns.yaml" ]; then
        MCO_FLAGS+=(--cloud-lb-config-file=/assets/manifests/openshift-lb-config.yaml)
    fi
    # The MCO reads the payload's image list instead of one flag per image.
    podman run --quiet --rm --net=none --entrypoint=cat \
        "${RELEASE_IMAGE_DIGEST}" /release-manifests/image-references >image-references
    bootkube_podman_run \
        --name mco-render \
        --user 0 \
        --volume "$PWD:/assets:z" \
        "${MACHINE_CONFIG_OPERATOR_IMAGE}" \
        bootstrap \
        --root-ca=/assets/tls/root-ca.crt \
        --kube-ca=/assets/tls/kube-apiserver-complete-client-ca-bundle.crt \
        --config-file=/assets/manifests/cluster-config.yaml \
        --dest-dir=/assets/mco-bootstrap \
        --pull-secret=/assets/manifests/openshift-config-secret-pull-secret.yaml \
        --release-image="${RELEASE_IMAGE_DIGEST}" \
        --image-references=assets/image-references \
        --payload-version="${VERSION}" \
        "${MCO_FLAGS[@]}"
    # The bootstrap MCC reads pools, controller config and every manifest here.
    mkdir --parents /etc/mcc/bootstrap /etc/mcs/bootstrap /etc/kubernetes/manifests /etc/kubernetes/static-pod-resources
    cp mco-bootstrap/bootstrap/manifests/* /etc/mcc/bootstrap/
    cp openshift/* /etc/mcc/bootstrap/
    cp manifests/* /etc/mcc/bootstrap/
    # 4.21+: the bootstrap MCC reads the payload's image list too.
    if version_at_least 4.21; then
        cp image-references /etc/mcc/bootstrap/
    fi
    # The MCS hands this kubeconfig to the masters as their bootstrap kubeconfig.
    cp auth/kubeconfig-kubelet /etc/mcs/kubeconfig
    # This copy starts the bootstrap MCC and MCS.
    cp mco-bootstrap/bootstrap/machineconfigoperator-bootstrap-pod.yaml /etc/kubernetes/manifests/
    # On-prem platforms get keepalived/coredns/haproxy pods, clouds with
    # cluster-hosted DNS a coredns pod; platform none has none.
    STATIC_POD_PLATFORMS=(baremetal openstack ovirt vsphere nutanix gcp)
    if version_at_least 4.19; then
        STATIC_POD_PLATFORMS+=(aws)
    fi
    if version_at_least 4.21; then
        STATIC_POD_PLATFORMS+=(azure)
    fi
    for platform in "${STATIC_POD_PLATFORMS[@]}"; do
        if [ -d "mco-bootstrap/${platform}/manifests" ]; then
            cp "mco-bootstrap/${platform}"/manifests/* /etc/kubernetes/manifests/
            cp --recursive "mco-bootstrap/${platform}"/static-pod-resources/* /etc/kubernetes/static-pod-resources/
        fi
    done
    cp mco-bootstrap/manifests/* manifests/
    # The MCS serves TLS from here.
    mkdir --parents /etc/ssl/mcs/
    cp tls/machine-config-server.crt /etc/ssl/mcs/tls.crt
    cp tls/machine-config-server.key /etc/ssl/mcs/tls.key
    mark_done mco-bootstrap
    record_service_stage_success
fi

echo "Check if API URL is resolvable during bootstrap"
resolve_url API_URL "${API_URL}"
echo "Check if API-Int URL is resolvable during bootstrap"
resolve_url API_INT_URL "${API_INT_URL}"

if stage_needed cco-bootstrap; then
    record_service_stage_start "cco-bootstrap"
    echo "Rendering CCO manifests..."
    rm --recursive --force cco-bootstrap
    bootkube_podman_run \
        --name cco-render \
        --user 0 \
        --volume "$PWD:/assets:z" \
        "${CLOUD_CREDENTIAL_OPERATOR_IMAGE}" \
        render \
        --dest-dir=/assets/cco-bootstrap \
        --manifests-dir=/assets/manifests \
        --cloud-credential-operator-image="${CLOUD_CREDENTIAL_OPERATOR_IMAGE}"
    # Both outputs are absent when the CloudCredential capability is disabled.
    if [ -d cco-bootstrap/manifests ]; then
        cp cco-bootstrap/manifests/* manifests/
    fi
    if [ -f cco-bootstrap/bootstrap-manifests/cloud-credential-operator-pod.yaml ]; then
        cp cco-bootstrap/bootstrap-manifests/* bootstrap-manifests/
    fi
    mark_done cco-bootstrap
    record_service_stage_success
fi
