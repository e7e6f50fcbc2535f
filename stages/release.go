package stages

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/bootlab/bootlab/internal/node"
)

// NodeReleaseImage is the helper the installer stamps with the release pull
// spec; bootkube.sh sources it for RELEASE_IMAGE_DIGEST and image_for.
const NodeReleaseImage = "/usr/local/bin/release-image.sh"

// payloadCommand prints what release-image.sh names: RELEASE_IMAGE and the
// RELEASE_IMAGE_DIGEST it resolves, as bootkube.sh sees them. It sources
// the file in a subshell, with neither variable inherited, rather than in
// a new bash: no program starts (each costs 0.04 to 0.1 s on an emulated
// node, and every `stage run` asks this before anything runs).
const payloadCommand = `( RELEASE_IMAGE= RELEASE_IMAGE_DIGEST=; . ` + NodeReleaseImage +
	` >/dev/null 2>&1; echo "${RELEASE_IMAGE-} ${RELEASE_IMAGE_DIGEST-}" )`

// NodePayload returns the pull specs of the node's release payload, as its
// release-image.sh names it (the tag and the digest); nil when the node has
// no release-image.sh.
func NodePayload(ctx context.Context, n node.Node) ([]string, error) {
	if _, err := n.Stat(ctx, NodeReleaseImage); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("check %s on %s: %w", NodeReleaseImage, n, err)
	}
	out, err := node.Output(ctx, n, payloadCommand)
	if err != nil {
		return nil, fmt.Errorf("read the release image of %s from %s: %w", n, NodeReleaseImage, err)
	}
	return strings.Fields(string(out)), nil
}

// CheckReleaseImage refuses an override of the release image that is not
// the node's payload: bootkube.sh and bootkube.service render and run the
// rest of the control plane from the node's, so the stages would mix two
// payloads. Any override goes where the node names no payload.
func CheckReleaseImage(override string, payload []string) error {
	if override == "" || len(payload) == 0 || slices.Contains(payload, override) {
		return nil
	}
	return &RefusedError{Reason: fmt.Sprintf(
		"--release-image %s is not the node's release image (%s in %s): bootkube.sh and bootkube.service render and run the rest of the control plane from the node's payload, so the stages would mix two payloads (operator images, feature gates and versions that do not belong together). Leave --release-image out: the stages use the node's. Nothing ran",
		override, strings.Join(payload, ", "), NodeReleaseImage)}
}

// CheckVersion refuses a release the node contradicts: the node runs
// release (4.21.3), and want is what a flag or a spec asks for.
func CheckVersion(want, nodeRelease Version, release, flag string) error {
	if want == nodeRelease {
		return nil
	}
	return &RefusedError{Reason: fmt.Sprintf(
		"%s %s contradicts the node, whose release is %s (read from its release image): the stages would render with %s's flags and steps against a %s payload. Leave %s out: the node's release is used. Nothing ran",
		flag, want, release, want, nodeRelease, flag)}
}
