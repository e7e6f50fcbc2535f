#!/usr/bin/env bash
# Test double of the installer's bootstrap-cluster-gather.sh.
cluster_bootstrap_gather() {
    echo "Gathering cluster resources (fixture: nothing to gather)"
}
