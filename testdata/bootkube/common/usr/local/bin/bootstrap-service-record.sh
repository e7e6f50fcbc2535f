#!/usr/bin/env bash
# Test double of the installer's bootstrap-service-record.sh: the same
# functions and record shape (/var/log/openshift/<service>.json), written
# for bootlab's fixtures.

SERVICE_RECORDS_DIR="${SERVICE_RECORDS_DIR:-/var/log/openshift/}"
SERVICE_NAME="${SERVICE_NAME:-bootkube}"

add_service_record_entry() {
    local file="${SERVICE_RECORDS_DIR%/}/${SERVICE_NAME}.json"
    mkdir --parents "$(dirname "${file}")"
    { [ -f "${file}" ] && cat "${file}" || echo '[]'; } |
        jq --arg timestamp "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
            --arg stage "${STAGE_NAME-}" --arg phase "${PHASE}" \
            --arg result "${RESULT-}" --arg errorLine "${ERROR_LINE-}" \
            --arg errorMessage "${ERROR_MESSAGE-}" \
            '. += [{$timestamp,$stage,$phase,$result,$errorLine,$errorMessage} | with_entries(select(.value != ""))]' \
            >"${file}.tmp" && mv "${file}.tmp" "${file}"
}

record_service_start() {
    local PHASE="service start"
    add_service_record_entry
}

record_service_end() {
    local PHASE="service end" RESULT=${1:?result}
    add_service_record_entry
}

record_service_stage_start() {
    if [ "${STAGE_NAME-}" ]; then
        echo "attempt to record the start of a stage without ending the previous one"
        exit 1
    fi
    local PHASE="stage start"
    STAGE_NAME=${1:?stage name}
    add_service_record_entry
}

record_service_stage_end() {
    if [ -z "${STAGE_NAME-}" ]; then
        echo "attempt to record the end of a stage without starting one"
        exit 1
    fi
    local PHASE="stage end" RESULT=${1:?result}
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

record_service_exit() {
    local RESULT=success ERROR_LINE="" ERROR_MESSAGE=""
    if [ "${1}" -ne 0 ]; then
        RESULT=failure
        ERROR_LINE="$(caller 0 || true)"
        ERROR_MESSAGE="exit status ${1}"
    fi
    if [ "${STAGE_NAME-}" ]; then
        record_service_stage_end "${RESULT}"
    fi
    record_service_end "${RESULT}"
}

record_service_start
trap 'record_service_exit $?' EXIT
