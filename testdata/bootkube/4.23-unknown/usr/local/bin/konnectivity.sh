#!/usr/bin/env bash
# bootlab fixture: shaped like the konnectivity.sh the installer renders
# (konnectivity enabled) and bootkube.sh sources. Written for tests.

konnectivity_setup() {
    BOOTSTRAP_NODE_IP=192.168.126.10
    export BOOTSTRAP_NODE_IP
    echo "Using bootstrap node IP: ${BOOTSTRAP_NODE_IP}"

    if [ ! -f konnectivity-certs.done ]; then
        record_service_stage_start "konnectivity-certs"
        /usr/local/bin/konnectivity-certs.sh "${BOOTSTRAP_NODE_IP}"
        touch konnectivity-certs.done
        record_service_stage_success
    fi

    if [ ! -f konnectivity-server-bootstrap.done ]; then
        record_service_stage_start "konnectivity-server-bootstrap"
        echo "Creating Konnectivity server static pod manifest..."
        KONNECTIVITY_IMAGE=$(image_for apiserver-network-proxy)
        export KONNECTIVITY_IMAGE
        envsubst </opt/openshift/konnectivity-server-pod.yaml >/etc/kubernetes/manifests/konnectivity-server-pod.yaml
        touch konnectivity-server-bootstrap.done
        record_service_stage_success
    fi
}

konnectivity_manifests() {
    if [ ! -f konnectivity-agent-manifest.done ]; then
        record_service_stage_start "konnectivity-agent-manifest"
        echo "Creating Konnectivity agent manifests..."
        KONNECTIVITY_IMAGE=$(image_for apiserver-network-proxy)
        export KONNECTIVITY_IMAGE
        cp /opt/openshift/konnectivity-namespace.yaml manifests/konnectivity-namespace.yaml
        envsubst </opt/openshift/konnectivity-agent-daemonset.yaml >manifests/konnectivity-agent-daemonset.yaml
        touch konnectivity-agent-manifest.done
        record_service_stage_success
    fi
}

konnectivity_cleanup() {
    if [ ! -f konnectivity-cleanup.done ]; then
        record_service_stage_start "konnectivity-cleanup"
        echo "Cleaning up bootstrap konnectivity resources..."
        oc delete namespace openshift-bootstrap-konnectivity \
            --kubeconfig=/opt/openshift/auth/kubeconfig \
            --ignore-not-found=true
        rm -f /etc/kubernetes/manifests/konnectivity-server-pod.yaml
        touch konnectivity-cleanup.done
        record_service_stage_success
    fi
}
