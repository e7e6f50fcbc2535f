#!/usr/bin/env bash
# Test double of the installer's release-image.sh: the release image, its
# digest and image_for (the payload's CVO prints a component's pull spec).
RELEASE_IMAGE="${RELEASE_IMAGE:-quay.io/example/release:fixture}"
RELEASE_IMAGE_DIGEST=quay.io/example/release@sha256:0123

image_for() {
    podman run --quiet --rm --net=none "${RELEASE_IMAGE_DIGEST}" image "${1}"
}
