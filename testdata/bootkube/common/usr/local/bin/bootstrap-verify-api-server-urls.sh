#!/usr/bin/env bash
# Test double of the installer's bootstrap-verify-api-server-urls.sh: each
# check records its own stage and never fails bootkube; it returns non-zero
# when the name did not resolve (the URL did not answer) so the caller
# writes the marker only on success.
# shellcheck disable=SC1091
. /usr/local/bin/bootstrap-service-record.sh

resolve_url() {
    local stage=resolve-api-url
    [ "${1}" = API_URL ] || stage=resolve-api-int-url
    echo "Checking if ${2} of type ${1} is resolvable"
    echo "Starting stage ${stage}"
    record_service_stage_start "${stage}"
    if [ -n "$(dig "${2}" +short)" ]; then
        echo "Successfully resolved ${1} ${2}"
        record_service_stage_success
        return 0
    fi
    echo "Unable to resolve ${1} ${2}"
    record_service_stage_failure
    return 1
}

check_url() {
    local stage=check-api-url url="https://${2}:6443/readyz"
    [ "${1}" = API_URL ] || stage=check-api-int-url
    echo "Checking if ${2} of type ${1} reachable"
    record_service_stage_start "${stage}"
    if [ "$(curl -k --get --silent --output /dev/null --write-out '%{http_code}' "${url}")" = 200 ]; then
        echo "Success while trying to reach ${1}'s https endpoint at ${url}"
        record_service_stage_success
        return 0
    fi
    echo "Unable to validate. ${url} is currently unreachable."
    record_service_stage_failure
    return 1
}
