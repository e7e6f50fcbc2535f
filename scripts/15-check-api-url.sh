#!/usr/bin/env bash
# Stage 15 API checks and completion: .bootkube.done
#
# Checks that api and api-int answer /readyz (never fatal), then writes
# .bootkube.done: approve-csr.service stops, progress.service reports
# completion, and bootkube.service will never start again.
# shellcheck source-path=SCRIPTDIR source=lib/bootkube.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bootkube.sh" # bootlab: library

echo "Check if API URL is reachable during bootstrap"
check_url API_URL "${API_URL}"
echo "Check if API-Int URL is reachable during bootstrap"
check_url API_INT_URL "${API_INT_URL}"

touch /opt/openshift/.bootkube.done
echo "bootkube.service complete"
