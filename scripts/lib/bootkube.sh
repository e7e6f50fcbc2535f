#!/usr/bin/env bash
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
#   sudo bash scripts/07-etcd-bootstrap.sh
# It takes the node's release (OPENSHIFT_VERSION=4.19 insists on one, and is
# refused if the node runs another) and refuses to run before an earlier
# stage it needs, or to redo (BOOTLAB_FORCE=1) what a later stage used.
# `bootlab stage run --dry-run 07` prints the same script with this library
# and every setting filled in.

set -euoE pipefail

# ---- settings (bootlab writes them at the top of the script it sends) ----

# ASSET_DIR is bootkube's working directory: the installer's assets.
: "${ASSET_DIR:=/opt/openshift}"
# OPENSHIFT_VERSION (major.minor) chooses the flags and steps of that release.
# Empty means the node's own: the VERSION stage 02 wrote, else the release
# image's (`oc adm release info`, as bootkube computes VERSION). A value the
# node contradicts is refused.
: "${OPENSHIFT_VERSION:=}"
# STAGE_NUMBER is this script's stage (07), from its file name when unset.
: "${STAGE_NUMBER:=$(basename "$0" | sed -n 's/^\([0-9][0-9]\)-.*/\1/p')}"
# BOOTLAB_FORCE=1 redoes steps whose .done marker exists.
: "${BOOTLAB_FORCE:=0}"
# BOOTLAB_FORCE_THROUGH: the last stage `bootlab stage run --force` reruns
# in the same run (later stages up to it are redone after this one).
: "${BOOTLAB_FORCE_THROUGH:=${STAGE_NUMBER}}"
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
# KONNECTIVITY (4.22+): auto runs the konnectivity steps when the installer
# laid down their inputs (konnectivity-server-pod.yaml in ASSET_DIR), as it
# does when its KonnectivityEnabled template flag is on; false never runs them.
: "${KONNECTIVITY:=auto}"
# BOOTSTRAP_NODE_IP is the address konnectivity agents dial back to; empty
# means the source address of the default route, as bootkube detects it.
: "${BOOTSTRAP_NODE_IP:=}"

# bootkube.service's journal: on a real bootstrap systemd keeps what the
# unit prints (journalctl -u bootkube.service). A rehearsal bootstrap has
# no systemd; its agent keeps that journal, so the script runs again under
# the agent's bootlab-journal, which copies each line it prints there.
if [ -z "${BOOTLAB_JOURNAL-}" ] && command -v bootlab-journal >/dev/null; then
    BOOTLAB_JOURNAL=1 exec bootlab-journal --unit "${SERVICE_NAME}.service" --identifier bootkube.sh -- bash "$0" "$@"
fi

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

# images_file_version FILE sets IMAGES_VERSION to the VERSION that stage
# 02 wrote in FILE, its quotes dropped: what
# $(sed -n 's/^VERSION=[quotes]*\([^quotes]*\).*/\1/p' FILE) would be
# (every VERSION line's, one per line; empty when there is none). bash
# reads the file itself: a sed is one more program on the node for every
# stage, 0.05 s on an emulated one. scripts.TestImagesFileVersionIsSed
# holds the two to the same answer.
images_file_version() {
    local line value
    IMAGES_VERSION=""
    while IFS= read -r line || [ -n "${line}" ]; do
        case "${line}" in
        VERSION=*)
            value=${line#VERSION=}
            while [ "${value#[\'\"]}" != "${value}" ]; do
                value=${value#[\'\"]}
            done
            IMAGES_VERSION+="${value%%[\'\"]*}"$'\n'
            ;;
        esac
    done <"${1}"
    while [ "${IMAGES_VERSION%$'\n'}" != "${IMAGES_VERSION}" ]; do
        IMAGES_VERSION=${IMAGES_VERSION%$'\n'}
    done
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
# service, keeping only the fields that have a value. The installer's
# helper takes the directory from dirname and the time from date, and runs
# mkdir every time; here bash does those itself (a stage writes four
# records, and on an emulated node every program started costs about
# 0.05 s). The installer pipes the old array through jq and moves the
# result over the file; one jq start costs about 0.5 s on an emulated
# node, so where bash can write the very bytes jq would, it does
# (service_record_by_bash), and jq writes every other entry
# (service_record_by_jq). scripts.TestServiceRecordsBashIsJq holds the
# two to the same bytes.
add_service_record_entry() {
    local file="${SERVICE_RECORDS_DIR%/}/${SERVICE_NAME}.json" now
    [ -d "${file%/*}" ] || mkdir --parents "${file%/*}"
    TZ=UTC printf -v now '%(%Y-%m-%dT%H:%M:%SZ)T' -1
    service_record_by_bash "${file}" "${now}" ||
        service_record_by_jq "${file}" "${now}"
    mv "${file}.tmp" "${file}"
}

# service_record_by_jq FILE TIMESTAMP writes FILE.tmp: FILE's array (or
# an empty one) with the entry added, as the installer's helper does.
service_record_by_jq() {
    { [ -f "${1}" ] && cat "${1}" || echo '[]'; } |
        jq \
            --arg timestamp "${2}" \
            --arg stage "${STAGE_NAME-}" \
            --arg phase "${PHASE}" \
            --arg result "${RESULT-}" \
            --arg errorLine "${ERROR_LINE-}" \
            --arg errorMessage "${ERROR_MESSAGE-}" \
            '. += [{$timestamp,$stage,$phase,$result,$errorLine,$errorMessage}
                   | with_entries(select(.value != ""))]' \
            >"${1}.tmp"
}

# service_record_by_bash FILE TIMESTAMP writes FILE.tmp as jq would, in
# jq's layout (two-space indent, the fields in the same order), when every
# value is printable ASCII (then only " and \ need escaping) and FILE is
# absent or in jq's layout. Otherwise it writes nothing and fails, and jq
# does the work (and refuses a FILE that is not JSON, as the installer's).
service_record_by_bash() {
    local LC_ALL=C old="" entry="" value i
    local -a keys=(timestamp stage phase result errorLine errorMessage)
    local -a values=("${2}" "${STAGE_NAME-}" "${PHASE}" "${RESULT-}" "${ERROR_LINE-}" "${ERROR_MESSAGE-}")
    for i in "${!keys[@]}"; do
        value=${values[i]}
        [ -n "${value}" ] || continue
        case "${value}" in *[!\ -~]*) return 1 ;; esac
        value=${value//\\/\\\\}
        value=${value//\"/\\\"}
        entry+="${entry:+,$'\n'}    \"${keys[i]}\": \"${value}\""
    done
    [ -n "${entry}" ] || return 1
    if [ -f "${1}" ]; then
        IFS= read -r -d '' old <"${1}" || true
        case "${old}" in
        $'[]\n') old="[" ;;
        $'[\n  {\n'*$'\n  }\n]\n') old="${old%$'\n]\n'}," ;;
        *) return 1 ;;
        esac
    else
        old="["
    fi
    printf '%s\n  {\n%s\n  }\n]\n' "${old}" "${entry}" >"${1}.tmp"
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
# and records the end of the service, like bootkube's EXIT trap. bootkube
# ends with success only once it is finished: a stage that succeeds
# before .bootkube.done records result "stopped", with what has not run.
record_service_exit() {
    local RESULT=success ERROR_LINE="" ERROR_MESSAGE=""
    if [ "${1}" -ne 0 ]; then
        RESULT=failure
        ERROR_LINE="$(caller 0 || true)"
        ERROR_MESSAGE="exit status ${1}"
    elif [ ! -f "${ASSET_DIR}/.bootkube.done" ]; then
        RESULT=stopped
        stages_after "${STAGE_NUMBER}"
        ERROR_MESSAGE=${STAGES_AFTER}
    fi
    if [ -n "${STAGE_NAME-}" ]; then
        record_service_stage_end "${RESULT}"
    fi
    local PHASE="service end"
    add_service_record_entry
}

# ---- stage order: nothing runs out of bootkube's order ----
#
# BOOTLAB_STAGES lists the stages in bootkube's order: number, slug, the
# first release that has the stage, and what proves it finished (its .done
# markers; record:STEP is a step without marker whose success
# bootkube.json records). A stage needs every earlier one its release has
# and that leaves proof (02 leaves none: bootkube redoes it on every start).
# stages.TestLibraryStageTable keeps this table equal to the Go catalog.
BOOTLAB_STAGES=(
    "01 openshift-manifests 4.16 openshift-manifests.done"
    "02 release-image 4.16"
    "03 api-bootstrap 4.16 api-bootstrap.done"
    "04 auth-api-bootstrap 4.19 auth-api-bootstrap.done"
    "05 config-bootstrap 4.16 config-bootstrap.done"
    "06 cvo-bootstrap 4.16 cvo-bootstrap.done"
    "07 etcd-bootstrap 4.16 etcd-bootstrap.done"
    "08 kube-apiserver-bootstrap 4.16 kube-apiserver-bootstrap.done"
    "09 kube-controller-manager-bootstrap 4.16 kube-controller-manager-bootstrap.done"
    "10 kube-scheduler-bootstrap 4.16 kube-scheduler-bootstrap.done"
    "11 ingress-operator-bootstrap 4.16 ingress-operator-bootstrap.done node-tuning-bootstrap.done"
    "12 mco-bootstrap 4.16 mco-bootstrap.done cco-bootstrap.done"
    "13 cb-bootstrap 4.16 cb-bootstrap.done"
    "14 cvo-overrides 4.16 cvo-overrides.done record:wait-for-ceo"
    "15 check-api-url 4.16 .bootkube.done"
)

# step_succeeded NAME: bootkube.json's last end of step NAME is a success.
step_succeeded() {
    local file="${SERVICE_RECORDS_DIR%/}/${SERVICE_NAME}.json"
    [ -f "${file}" ] &&
        jq -e --arg s "${1}" '[.[] | select(.stage == $s and .phase == "stage end")] | last | .result == "success"' \
            "${file}" >/dev/null
}

# The helpers below set a variable rather than print: a $(...) is a fork
# of this shell, 7 ms on an emulated node, and check_stage_order asks once
# for every earlier stage.

# proof_missing PROOF... sets PROOF_MISSING to what of a stage's proof the
# node lacks ("" if none).
proof_missing() {
    local p missing=()
    for p in "$@"; do
        case "${p}" in
        record:*) step_succeeded "${p#record:}" || missing+=("no successful ${p#record:} in bootkube.json") ;;
        *) [ -f "${ASSET_DIR}/${p}" ] || missing+=("${p} missing") ;;
        esac
    done
    PROOF_MISSING="${missing[*]}"
}

# proof_present PROOF... sets PROOF_PRESENT to the markers of a stage's
# proof that exist.
proof_present() {
    local p present=()
    for p in "$@"; do
        case "${p}" in
        record:*) ;;
        *) [ ! -f "${ASSET_DIR}/${p}" ] || present+=("${p}") ;;
        esac
    done
    PROOF_PRESENT="${present[*]}"
}

# stages_after NN sets STAGES_AFTER to what a run that stopped after stage
# NN leaves undone.
stages_after() {
    local entry num slug since rest=() IFS
    for entry in "${BOOTLAB_STAGES[@]}"; do
        read -r num slug since _ <<<"${entry}"
        if ((10#${num} > 10#${1})) && version_at_least "${since}"; then
            rest+=("${num} ${slug}")
        fi
    done
    IFS=,
    STAGES_AFTER="stage ${1} done; bootkube is not finished (no .bootkube.done); not run yet: ${rest[*]}"
}

# check_stage_order refuses to run this stage before an earlier one it
# needs has finished; nothing has run or been recorded yet.
check_stage_order() {
    local entry num slug since proof me=""
    for entry in "${BOOTLAB_STAGES[@]}"; do
        read -r num slug since proof <<<"${entry}"
        if [ "${num}" = "${STAGE_NUMBER}" ]; then
            me=${slug}
            # A stage this release lacks runs nothing (its script says so).
            version_at_least "${since}" || return 0
        fi
    done
    if [ -z "${me}" ]; then
        echo "STAGE_NUMBER=${STAGE_NUMBER} is not a stage (01 to 15): run the script under its own name (scripts/NN-<slug>.sh) or set STAGE_NUMBER" >&2
        exit 1
    fi
    for entry in "${BOOTLAB_STAGES[@]}"; do
        read -r num slug since proof <<<"${entry}"
        ((10#${num} < 10#${STAGE_NUMBER})) || break
        version_at_least "${since}" || continue
        # shellcheck disable=SC2086 # the proof is a list of words
        proof_missing ${proof}
        if [ -n "${PROOF_MISSING}" ]; then
            echo "stage ${STAGE_NUMBER} (${me}) needs stage ${num} (${slug}) first: run bootlab stage run ${num}, or scripts/${num}-${slug}.sh (${PROOF_MISSING}). bootkube.sh runs its steps in this order; nothing ran" >&2
            exit 1
        fi
    done
}

# check_force refuses BOOTLAB_FORCE=1 where a rerun breaks a later stage:
# one that ran since used what this stage made (unless rerun in the same
# `bootlab stage run --force`, through BOOTLAB_FORCE_THROUGH), or
# cluster-bootstrap after it handed over. 02, 14 and 15 are safe reruns.
check_force() {
    local entry num slug since proof
    [ "${BOOTLAB_FORCE}" = 1 ] || return 0
    case "${STAGE_NUMBER}" in 02 | 14 | 15) return 0 ;; esac
    for entry in "${BOOTLAB_STAGES[@]}"; do
        read -r num slug since proof <<<"${entry}"
        # A stage this release lacks runs nothing: nothing to refuse.
        if [ "${num}" = "${STAGE_NUMBER}" ] && ! version_at_least "${since}"; then
            return 0
        fi
    done
    if [ "${STAGE_NUMBER}" = 13 ] && [ -f "${ASSET_DIR}/cb-bootstrap.done" ]; then
        echo "BOOTLAB_FORCE=1 on stage 13 refused: cb-bootstrap.done exists, so cluster-bootstrap has handed the control plane to the masters; a rerun would start a second temporary control plane. Nothing ran" >&2
        exit 1
    fi
    for entry in "${BOOTLAB_STAGES[@]}"; do
        read -r num slug since proof <<<"${entry}"
        ((10#${num} > 10#${BOOTLAB_FORCE_THROUGH})) || continue
        version_at_least "${since}" || continue
        # shellcheck disable=SC2086 # the proof is a list of words
        proof_present ${proof}
        if [ -n "${PROOF_PRESENT}" ]; then
            echo "BOOTLAB_FORCE=1 on stage ${STAGE_NUMBER} refused: stage ${num} (${slug}) has run since (${PROOF_PRESENT}) and used what stage ${STAGE_NUMBER} made; a rerun would leave them disagreeing. On a lab, bootlab stage reset ${STAGE_NUMBER} goes back to before it; a real node has no way back. Nothing ran" >&2
            exit 1
        fi
    done
}

# major_minor 4.21.3 sets MAJOR_MINOR to 4.21.
major_minor() {
    local major=${1%%.*} minor=${1#*.}
    MAJOR_MINOR="${major}.${minor%%[!0-9]*}"
}

# check_release sets OPENSHIFT_VERSION from the node's release when unset,
# and refuses one the node contradicts: the scripts would render with
# another release's flags and steps than the payload's.
check_release() {
    local have="" have_mm
    if [ -f "${IMAGES_FILE}" ]; then
        images_file_version "${IMAGES_FILE}"
        have=${IMAGES_VERSION}
    fi
    if [ -z "${have}" ] && ! have=$(release_info '{.metadata.version}' 2>/dev/null); then
        have=""
    fi
    if [ -z "${have}" ]; then
        if [ -z "${OPENSHIFT_VERSION}" ]; then
            echo "cannot read the node's release (no VERSION in ${IMAGES_FILE}, and oc adm release info of ${RELEASE_IMAGE_DIGEST} failed): set OPENSHIFT_VERSION=major.minor" >&2
            exit 1
        fi
        echo "warning: cannot read the node's release; rendering for OpenShift ${OPENSHIFT_VERSION} as told" >&2
        return 0
    fi
    major_minor "${have}"
    if [ -z "${OPENSHIFT_VERSION}" ]; then
        OPENSHIFT_VERSION=${MAJOR_MINOR}
        echo "OpenShift ${have} (read from the node)"
        return 0
    fi
    have_mm=${MAJOR_MINOR}
    major_minor "${OPENSHIFT_VERSION}"
    if [ "${MAJOR_MINOR}" != "${have_mm}" ]; then
        echo "OPENSHIFT_VERSION=${OPENSHIFT_VERSION} contradicts the node, whose release is ${have}: the stages would render with ${OPENSHIFT_VERSION}'s flags and steps against a ${have} payload. Unset OPENSHIFT_VERSION (the node's release is used) or set it to ${have_mm}; nothing ran" >&2
        exit 1
    fi
}

# node_payload prints the release image(s) the installer stamped into the
# node's release-image.sh (RELEASE_IMAGE, RELEASE_IMAGE_DIGEST).
node_payload() {
    # shellcheck disable=SC2016 # expanded by the inner bash
    env RELEASE_IMAGE= RELEASE_IMAGE_DIGEST= bash -c \
        '. /usr/local/bin/release-image.sh >/dev/null 2>&1; echo "${RELEASE_IMAGE-} ${RELEASE_IMAGE_DIGEST-}"'
}

# ---- the release image and its component images ----

# release-image.sh (written by the installer) sets RELEASE_IMAGE_DIGEST and
# defines image_for. With RELEASE_IMAGE set, do the same here; on a node
# whose release-image.sh names another payload, an override is refused:
# bootkube.sh and bootkube.service use the node's, and the stages would
# render part of the control plane from a second payload.
if [ -n "${RELEASE_IMAGE}" ] && [ -f /usr/local/bin/release-image.sh ]; then
    node_images=" $(node_payload) "
    if [ "${node_images// /}" != "" ] && [[ "${node_images}" != *" ${RELEASE_IMAGE} "* ]]; then
        echo "RELEASE_IMAGE=${RELEASE_IMAGE} differs from the node's release image (${node_images# }in /usr/local/bin/release-image.sh): bootkube.sh renders and runs the rest of the control plane from that payload, so this would mix two payloads (operator images, feature gates and versions that do not match). Leave RELEASE_IMAGE empty to use the node's; nothing ran" >&2
        exit 1
    fi
fi
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

check_release
check_stage_order
check_force

record_service_start
trap 'record_service_exit $?' EXIT

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
if version_at_least 4.22; then
    # The konnectivity server (bootkube asks for it inside its konnectivity steps).
    IMAGE_VARIABLES+=(KONNECTIVITY_IMAGE=apiserver-network-proxy)
fi

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
    # bootkube asks for the Kubernetes version only from 4.18, where the
    # kube-apiserver render gained --operand-kubernetes-version.
    KUBERNETES_VERSION=""
    if version_at_least 4.18; then
        KUBERNETES_VERSION=$(release_info '{.displayVersions.kubernetes.Version}')
    fi
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

# BOOTKUBE_PODMAN_FLAGS are the flags every bootkube container gets: host
# network (no IP clashes with the lab's networks), removed when it exits.
# From 4.21 bootkube also pins the k8s-file log driver, so the container
# logs no longer depend on the host's containers.conf default.
BOOTKUBE_PODMAN_FLAGS=(--quiet --net=host --rm)
if version_at_least 4.21; then
    BOOTKUBE_PODMAN_FLAGS+=(--log-driver=k8s-file)
fi

# bootkube_podman_run runs a render container with BOOTKUBE_PODMAN_FLAGS.
bootkube_podman_run() {
    podman run "${BOOTKUBE_PODMAN_FLAGS[@]}" "$@"
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
    # Upstream's wording, without "is".
    echo "Checking if ${host} of type ${kind} reachable"
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

# ---- konnectivity (4.22+): lets the bootstrap API server reach pod IPs ----
#
# bootkube sources konnectivity.sh, which the installer renders with its
# KonnectivityEnabled flag: the server runs as a static pod here, agents run
# as a DaemonSet on the cluster's nodes and dial back to BOOTSTRAP_NODE_IP,
# and the bootstrap API server sends cluster-bound traffic (webhooks) through
# them. bootlab runs the same four marked steps.

# konnectivity_wanted: true when this release has the konnectivity steps
# and they are switched on for this cluster (see KONNECTIVITY).
konnectivity_wanted() {
    version_at_least 4.22 || return 1
    case "${KONNECTIVITY}" in
    false) return 1 ;;
    true) return 0 ;;
    esac
    [ -f "${ASSET_DIR}/konnectivity-server-pod.yaml" ]
}

# konnectivity_node_ip exports BOOTSTRAP_NODE_IP, detecting it from the
# default route when it is not set (IPv4 first, then IPv6).
konnectivity_node_ip() {
    if [ -z "${BOOTSTRAP_NODE_IP}" ]; then
        BOOTSTRAP_NODE_IP=$(ip -j route get 1.1.1.1 2>/dev/null | jq -r '.[0].prefsrc // empty' || true)
    fi
    if [ -z "${BOOTSTRAP_NODE_IP}" ]; then
        BOOTSTRAP_NODE_IP=$(ip -6 -j route get 2001:4860:4860::8888 2>/dev/null | jq -r '.[0].prefsrc // empty' || true)
    fi
    if [ -z "${BOOTSTRAP_NODE_IP}" ]; then
        echo "cannot tell the bootstrap node's address: set BOOTSTRAP_NODE_IP" >&2
        return 1
    fi
    export BOOTSTRAP_NODE_IP
    echo "Konnectivity agents will dial ${BOOTSTRAP_NODE_IP}"
}

# konnectivity_make_certs DIR IP writes a throw-away CA (valid one day) and,
# signed by it, the server certificate for IP and one client certificate all
# agents share. The installer ships /usr/local/bin/konnectivity-certs.sh for
# this; bootlab uses it when present and this otherwise.
konnectivity_make_certs() {
    local dir=${1} ip=${2} name
    if [ -x /usr/local/bin/konnectivity-certs.sh ]; then
        /usr/local/bin/konnectivity-certs.sh "${ip}"
        return
    fi
    mkdir --parents "${dir}"
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/O=openshift/CN=konnectivity-signer" \
        -keyout "${dir}/ca.key" -out "${dir}/ca.crt" 2>/dev/null
    for name in server agent; do
        openssl req -new -newkey rsa:2048 -nodes -subj "/O=openshift/CN=konnectivity-${name}" \
            -keyout "${dir}/${name}.key" -out "${dir}/${name}.csr" 2>/dev/null
    done
    openssl x509 -req -days 1 -CA "${dir}/ca.crt" -CAkey "${dir}/ca.key" -CAcreateserial \
        -extfile <(printf 'extendedKeyUsage=serverAuth\nsubjectAltName=IP:%s\n' "${ip}") \
        -in "${dir}/server.csr" -out "${dir}/server.crt" 2>/dev/null
    openssl x509 -req -days 1 -CA "${dir}/ca.crt" -CAkey "${dir}/ca.key" -CAcreateserial \
        -extfile <(printf 'extendedKeyUsage=clientAuth\n') \
        -in "${dir}/agent.csr" -out "${dir}/agent.crt" 2>/dev/null
    rm --force "${dir}"/*.csr
    chmod 0600 "${dir}"/*.key
}

KONNECTIVITY_CERT_DIR=${ASSET_DIR}/tls/konnectivity

# konnectivity_setup runs steps konnectivity-certs and
# konnectivity-server-bootstrap: the server static pod starts at once.
konnectivity_setup() {
    konnectivity_node_ip
    if stage_needed konnectivity-certs; then
        record_service_stage_start "konnectivity-certs"
        echo "Generating Konnectivity certificates in ${KONNECTIVITY_CERT_DIR}..."
        konnectivity_make_certs "${KONNECTIVITY_CERT_DIR}" "${BOOTSTRAP_NODE_IP}"
        mark_done konnectivity-certs
        record_service_stage_success
    fi
    if stage_needed konnectivity-server-bootstrap; then
        record_service_stage_start "konnectivity-server-bootstrap"
        echo "Creating Konnectivity server static pod manifest..."
        export KONNECTIVITY_IMAGE
        envsubst <"${ASSET_DIR}/konnectivity-server-pod.yaml" >/etc/kubernetes/manifests/konnectivity-server-pod.yaml
        mark_done konnectivity-server-bootstrap
        record_service_stage_success
    fi
}

# konnectivity_manifests runs step konnectivity-agent-manifest: the agents'
# namespace, their shared client certificate and their DaemonSet join
# manifests/, for cluster-bootstrap to create.
konnectivity_manifests() {
    if stage_needed konnectivity-agent-manifest; then
        record_service_stage_start "konnectivity-agent-manifest"
        echo "Creating Konnectivity agent manifests..."
        export KONNECTIVITY_IMAGE KONNECTIVITY_AGENT_CERT_BASE64 KONNECTIVITY_AGENT_KEY_BASE64 KONNECTIVITY_CA_CERT_BASE64
        KONNECTIVITY_AGENT_CERT_BASE64=$(base64 -w0 "${KONNECTIVITY_CERT_DIR}/agent.crt")
        KONNECTIVITY_AGENT_KEY_BASE64=$(base64 -w0 "${KONNECTIVITY_CERT_DIR}/agent.key")
        KONNECTIVITY_CA_CERT_BASE64=$(base64 -w0 "${KONNECTIVITY_CERT_DIR}/ca.crt")
        cp "${ASSET_DIR}/konnectivity-namespace.yaml" manifests/konnectivity-namespace.yaml
        envsubst <"${ASSET_DIR}/konnectivity-agent-certs-secret.yaml" >manifests/konnectivity-agent-certs.yaml
        envsubst <"${ASSET_DIR}/konnectivity-agent-daemonset.yaml" >manifests/konnectivity-agent-daemonset.yaml
        mark_done konnectivity-agent-manifest
        record_service_stage_success
    fi
}

# konnectivity_cleanup runs step konnectivity-cleanup once cluster-bootstrap
# is done: deleting the namespace removes the agents and their secret;
# removing the manifest stops the server.
konnectivity_cleanup() {
    if stage_needed konnectivity-cleanup; then
        record_service_stage_start "konnectivity-cleanup"
        echo "Cleaning up bootstrap konnectivity resources..."
        oc delete namespace openshift-bootstrap-konnectivity \
            --kubeconfig=/opt/openshift/auth/kubeconfig \
            --ignore-not-found=true
        rm --force /etc/kubernetes/manifests/konnectivity-server-pod.yaml
        mark_done konnectivity-cleanup
        record_service_stage_success
    fi
}
