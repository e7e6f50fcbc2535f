#!/usr/bin/env bash
# bootlab stage 04 auth-api-bootstrap (script render-auth-api) for OpenShift 4.19.
# This is scripts/04-auth-api-bootstrap.sh with scripts/lib/bootkube.sh inlined and its
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
# Shared library of the bootlab stage scripts (scripts/NN-<slug>.sh).
#
# It mirrors the helpers the real bootkube.sh gets from the files the
# installer puts in /usr/local/bin on the bootstrap node:
#   release-image.sh                  -> image_for, RELEASE_IMAGE_DIGEST
#   bootstrap-service-record.sh       -> record_service_* (the JSON records)
#   bootstrap-verify-api-server-urls.sh -> resolve_url, check_url
#   bootkube.sh itself                -> bootkube_podman_run, wait_for_etcd_cluster
# plus bootlab's own marker helpers (stage_needed, mark_done) and the image
# variables that stage 02 resolves once and the later stages load.
#
# Run a stage by hand on the bootstrap node, as root:
#   sudo OPENSHIFT_VERSION=4.19 bash scripts/07-etcd-bootstrap.sh
# `bootlab stage run --dry-run 07` prints the same script with this library
# and every setting filled in.

set -euoE pipefail

# ---- settings (bootlab writes them at the top of the script it sends) ----

# ASSET_DIR is bootkube's working directory: the installer's assets.
: "${ASSET_DIR:=/opt/openshift}"
# OPENSHIFT_VERSION (major.minor) chooses the flags and steps of that release.
: "${OPENSHIFT_VERSION:=4.19}"
# BOOTLAB_FORCE=1 redoes steps whose .done marker exists.
: "${BOOTLAB_FORCE:=0}"
# RELEASE_IMAGE: empty means "the one the installer wrote into
# /usr/local/bin/release-image.sh", as bootkube does.
: "${RELEASE_IMAGE:=}"
# CLUSTER_PROFILE is passed to the CVO render when set (like the installer's
# OPENSHIFT_INSTALL_EXPERIMENTAL_CLUSTER_PROFILE).
: "${CLUSTER_PROFILE:=}"
# Service records go where bootkube's go, under the same service name, so
# `openshift-install gather bootstrap` reads our stages like its own.
: "${SERVICE_RECORDS_DIR:=/var/log/openshift/}"
: "${SERVICE_NAME:=bootkube}"
# IMAGES_FILE keeps what stage 02 resolved (bootlab's file; bootkube ignores it).
: "${IMAGES_FILE:=${ASSET_DIR}/bootlab-images.env}"

cd "${ASSET_DIR}"

# ---- versions ----

# version_at_least 4.18: true when OPENSHIFT_VERSION is 4.18 or newer.
version_at_least() {
    local want_major want_minor have_major have_minor
    want_major=${1%%.*}
    want_minor=${1#*.}
    have_major=${OPENSHIFT_VERSION%%.*}
    have_minor=${OPENSHIFT_VERSION#*.}
    have_minor=${have_minor%%.*}
    if [ "${have_major}" -ne "${want_major}" ]; then
        [ "${have_major}" -gt "${want_major}" ]
        return
    fi
    [ "${have_minor}" -ge "${want_minor}" ]
}

# ---- markers: the same /opt/openshift/<name>.done files bootkube writes ----

# stage_needed NAME: true when NAME.done is absent (or BOOTLAB_FORCE=1).
stage_needed() {
    if [ "${BOOTLAB_FORCE}" = 1 ]; then
        return 0
    fi
    if [ -f "${ASSET_DIR}/${1}.done" ]; then
        echo "${1}.done exists: ${1} already ran, skipping"
        return 1
    fi
    return 0
}

# mark_done NAME: write NAME.done, so neither bootlab nor bootkube redo it.
mark_done() {
    touch "${ASSET_DIR}/${1}.done"
}

# ---- service records (/var/log/openshift/<service>.json) ----

# add_service_record_entry appends one entry to the JSON array of the
# service, keeping only the fields that have a value.
add_service_record_entry() {
    local file="${SERVICE_RECORDS_DIR%/}/${SERVICE_NAME}.json"
    mkdir --parents "$(dirname "${file}")"
    { [ -f "${file}" ] && cat "${file}" || echo '[]'; } |
        jq \
            --arg timestamp "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
            --arg stage "${STAGE_NAME-}" \
            --arg phase "${PHASE}" \
            --arg result "${RESULT-}" \
            --arg errorLine "${ERROR_LINE-}" \
            --arg errorMessage "${ERROR_MESSAGE-}" \
            '. += [{$timestamp,$stage,$phase,$result,$errorLine,$errorMessage}
                   | with_entries(select(.value != ""))]' \
            >"${file}.tmp"
    mv "${file}.tmp" "${file}"
}

record_service_start() {
    local PHASE="service start"
    add_service_record_entry
}

# record_service_stage_start NAME opens a stage; stages do not nest.
record_service_stage_start() {
    if [ -n "${STAGE_NAME-}" ]; then
        echo "attempt to record the start of stage ${1} inside stage ${STAGE_NAME}"
        exit 1
    fi
    local PHASE="stage start"
    STAGE_NAME=${1:?record_service_stage_start needs a stage name}
    add_service_record_entry
}

# record_service_stage_end RESULT closes the open stage.
record_service_stage_end() {
    if [ -z "${STAGE_NAME-}" ]; then
        echo "attempt to record the end of a stage that was not started"
        exit 1
    fi
    local PHASE="stage end"
    local RESULT=${1:?record_service_stage_end needs a result}
    add_service_record_entry
    STAGE_NAME=""
}

record_service_stage_success() {
    record_service_stage_end success
}

record_service_stage_failure() {
    local ERROR_LINE ERROR_MESSAGE
    ERROR_LINE="$(caller 0 || true)"
    ERROR_MESSAGE="stage ${STAGE_NAME-} failed"
    record_service_stage_end failure
}

# record_service_exit CODE runs on exit: it closes an open stage as failed
# and records the end of the service, like bootkube's EXIT trap.
record_service_exit() {
    local RESULT=success ERROR_LINE="" ERROR_MESSAGE=""
    if [ "${1}" -ne 0 ]; then
        RESULT=failure
        ERROR_LINE="$(caller 0 || true)"
        ERROR_MESSAGE="exit status ${1}"
    fi
    if [ -n "${STAGE_NAME-}" ]; then
        record_service_stage_end "${RESULT}"
    fi
    local PHASE="service end"
    add_service_record_entry
}

record_service_start
trap 'record_service_exit $?' EXIT

# ---- the release image and its component images ----

# release-image.sh (written by the installer) sets RELEASE_IMAGE_DIGEST and
# defines image_for. With RELEASE_IMAGE set, do the same here.
if [ -z "${RELEASE_IMAGE}" ] && [ -f /usr/local/bin/release-image.sh ]; then
    # shellcheck disable=SC1091
    . /usr/local/bin/release-image.sh
else
    if [ -z "${RELEASE_IMAGE}" ]; then
        echo "RELEASE_IMAGE is empty and /usr/local/bin/release-image.sh is missing: is this the bootstrap node?" >&2
        exit 1
    fi
    # A multi-arch payload has several RepoDigests: take the one of .Digest.
    if ! RELEASE_IMAGE_DIGEST=$(podman inspect "${RELEASE_IMAGE}" --format json |
        jq -r 'first(.[].Digest as $d | .[].RepoDigests[] | select(contains($d)))') ||
        [ -z "${RELEASE_IMAGE_DIGEST}" ]; then
        echo "Warning: could not resolve ${RELEASE_IMAGE} to a digest; using the tag" >&2
        RELEASE_IMAGE_DIGEST="${RELEASE_IMAGE}"
    fi
fi

if ! declare -F image_for >/dev/null; then
    # image_for NAME prints the pull spec of component NAME: the payload's
    # entrypoint is the CVO, whose `image` command reads image-references.
    image_for() {
        podman run --quiet --rm --net=none "${RELEASE_IMAGE_DIGEST}" image "${1}"
    }
fi

# IMAGE_VARIABLES pairs each bootkube variable with its image_for name.
IMAGE_VARIABLES=(
    MACHINE_CONFIG_OPERATOR_IMAGE=machine-config-operator
    MACHINE_CONFIG_ETCD_IMAGE=etcd
    MACHINE_CONFIG_INFRA_IMAGE=pod
    CLUSTER_ETCD_OPERATOR_IMAGE=cluster-etcd-operator
    API_IMAGE=cluster-config-api
    CONFIG_OPERATOR_IMAGE=cluster-config-operator
    KUBE_APISERVER_OPERATOR_IMAGE=cluster-kube-apiserver-operator
    KUBE_CONTROLLER_MANAGER_OPERATOR_IMAGE=cluster-kube-controller-manager-operator
    KUBE_SCHEDULER_OPERATOR_IMAGE=cluster-kube-scheduler-operator
    INGRESS_OPERATOR_IMAGE=cluster-ingress-operator
    NODE_TUNING_OPERATOR_IMAGE=cluster-node-tuning-operator
    CLOUD_CREDENTIAL_OPERATOR_IMAGE=cloud-credential-operator
    OPENSHIFT_HYPERKUBE_IMAGE=hyperkube
    OPENSHIFT_CLUSTER_POLICY_IMAGE=cluster-policy-controller
    CLUSTER_BOOTSTRAP_IMAGE=cluster-bootstrap
)
if version_at_least 4.19; then
    IMAGE_VARIABLES+=(AUTH_OPERATOR_IMAGE=cluster-authentication-operator)
fi

# release_info FIELD prints a field of `oc adm release info`, honouring the
# installer's mirror configuration like bootkube does.
release_info() {
    local mirror=()
    if [ -f manifests/image-content-source-policy.yaml ]; then
        mirror=(--icsp-file=manifests/image-content-source-policy.yaml)
    elif [ -f manifests/image-digest-mirror-set.yaml ]; then
        mirror=(--idms-file=manifests/image-digest-mirror-set.yaml)
    fi
    oc adm release info -o "jsonpath=${1}" "${mirror[@]}" "${RELEASE_IMAGE_DIGEST}"
}

# resolve_images asks the payload for every component image and the
# versions, and writes them to IMAGES_FILE (stage 02).
resolve_images() {
    local pair var name value
    : >"${IMAGES_FILE}.tmp"
    for pair in "${IMAGE_VARIABLES[@]}"; do
        var=${pair%%=*}
        name=${pair#*=}
        # A plain assignment, so a failing image_for stops the script (set -e).
        value=$(image_for "${name}")
        printf -v "${var}" '%s' "${value}"
        printf '%s=%q\n' "${var}" "${!var}" >>"${IMAGES_FILE}.tmp"
    done
    VERSION=$(release_info '{.metadata.version}')
    KUBERNETES_VERSION=$(release_info '{.displayVersions.kubernetes.Version}')
    printf 'VERSION=%q\nKUBERNETES_VERSION=%q\nRELEASE_IMAGE_DIGEST=%q\n' \
        "${VERSION}" "${KUBERNETES_VERSION}" "${RELEASE_IMAGE_DIGEST}" >>"${IMAGES_FILE}.tmp"
    mv "${IMAGES_FILE}.tmp" "${IMAGES_FILE}"
}

# load_images sets the image variables, VERSION and KUBERNETES_VERSION from
# IMAGES_FILE, resolving them first when stage 02 has not run.
load_images() {
    if [ ! -f "${IMAGES_FILE}" ]; then
        echo "${IMAGES_FILE} is missing: resolving images now (stage 02 does this once)"
        resolve_images
    fi
    # shellcheck disable=SC1090
    . "${IMAGES_FILE}"
}

# ---- containers ----

# ETCD_ENDPOINTS is where the bootstrap etcd member listens (bootkube sets it
# just before the etcd stage).
ETCD_ENDPOINTS=https://localhost:2379

# bootkube_podman_run runs a render container: host network (no IP clashes
# with the lab's networks), removed when it exits.
bootkube_podman_run() {
    podman run --quiet --net=host --rm "$@"
}

# wait_for_etcd_cluster retries `etcdctl endpoint health` every 5 seconds
# until the bootstrap etcd member answers.
wait_for_etcd_cluster() {
    until bootkube_podman_run \
        --name etcdctl \
        --env ETCDCTL_API=3 \
        --volume /opt/openshift/tls:/opt/openshift/tls:ro,z \
        --entrypoint etcdctl \
        "${MACHINE_CONFIG_ETCD_IMAGE}" \
        --dial-timeout=10m \
        --cacert=/opt/openshift/tls/etcd-ca-bundle.crt \
        --cert=/opt/openshift/tls/etcd-client.crt \
        --key=/opt/openshift/tls/etcd-client.key \
        --endpoints="${ETCD_ENDPOINTS}" \
        endpoint health; do
        echo "etcdctl failed. Retrying in 5 seconds..."
        sleep 5
    done
}

# ---- API name checks (never fatal, like bootkube's) ----

# The API names come from the installer's Infrastructure manifest unless set.
infrastructure_url() {
    sed -n "s|^ *${1}: *https://\([^:/]*\).*|\1|p" manifests/cluster-infrastructure-02-config.yml 2>/dev/null | head -n 1
}
: "${API_URL:=$(infrastructure_url apiServerURL)}"
: "${API_INT_URL:=$(infrastructure_url apiServerInternalURI)}"

# resolve_url API_URL|API_INT_URL HOST records stage resolve-api[-int]-url
# and writes api[-int]-dns-resolved.done when HOST resolves.
resolve_url() {
    local kind=${1} host=${2} stage marker
    if [ "${kind}" = API_URL ]; then
        stage=resolve-api-url marker=api-dns-resolved
    else
        stage=resolve-api-int-url marker=api-int-dns-resolved
    fi
    if [ "${BOOTLAB_FORCE}" != 1 ] && [ -f "${marker}.done" ]; then
        echo "${marker}.done exists: ${host} resolved before, skipping"
        return 0
    fi
    echo "Checking if ${host} of type ${kind} is resolvable"
    echo "Starting stage ${stage}"
    record_service_stage_start "${stage}"
    if [ -n "$(dig "${host}" +short)" ]; then
        echo "Successfully resolved ${kind} ${host}"
        mark_done "${marker}"
        record_service_stage_success
    else
        echo "Unable to resolve ${kind} ${host}"
        record_service_stage_failure
    fi
}

# check_url API_URL|API_INT_URL HOST records stage check-api[-int]-url and
# writes api[-int]-dns-check.done when https://HOST:6443/readyz answers 200.
check_url() {
    local kind=${1} host=${2} stage marker url
    if [ "${kind}" = API_URL ]; then
        stage=check-api-url marker=api-dns-check
    else
        stage=check-api-int-url marker=api-int-dns-check
    fi
    url="https://${host}:6443/readyz"
    if [ "${BOOTLAB_FORCE}" != 1 ] && [ -f "${marker}.done" ]; then
        echo "${marker}.done exists: ${url} answered before, skipping"
        return 0
    fi
    echo "Checking if ${host} of type ${kind} is reachable"
    record_service_stage_start "${stage}"
    if [ "$(curl -k --get --silent --output /dev/null --write-out '%{http_code}' "${url}")" = 200 ]; then
        echo "Success while trying to reach ${kind}'s https endpoint at ${url}"
        mark_done "${marker}"
        record_service_stage_success
    else
        echo "Unable to reach ${kind}'s https endpoint at ${url}"
        echo "Unable to validate. ${url} is currently unreachable."
        record_service_stage_failure
    fi
}

# ---- scripts/04-auth-api-bootstrap.sh ----
# Stage 04 auth-api-bootstrap: render the RoleBindingRestriction CRD (4.19+)
#
# The authentication operator renders one CRD early, so the
# RestrictSubjectBindings admission plugin of the bootstrap API server does
# not block the system:* RoleBindings cluster-bootstrap creates.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh

# bootlab skips this stage before 4.19; this guard does the same by hand.
if ! version_at_least 4.19; then
    echo "OpenShift ${OPENSHIFT_VERSION} has no auth-api-bootstrap step (it arrived in 4.19): skipping"
    exit 0
fi

load_images

if stage_needed auth-api-bootstrap; then
    record_service_stage_start "auth-api-bootstrap"
    echo "Rendering auth api manifests..."
    rm --recursive --force auth-api-bootstrap
    bootkube_podman_run \
        --name auth-api-render \
        --volume "$PWD:/assets:z" \
        "${AUTH_OPERATOR_IMAGE}" \
        render \
        --asset-output-dir=/assets/auth-api-bootstrap/manifests \
        --rendered-manifest-dir=/assets/manifests \
        --cluster-profile=self-managed-high-availability \
        --payload-version="${VERSION}"
    cp auth-api-bootstrap/manifests/* manifests/
    mark_done auth-api-bootstrap
    record_service_stage_success
fi
