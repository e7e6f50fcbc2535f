package lab

import "github.com/bootlab/bootlab/internal/ignition"

// SavedBootkubeUnitPath is where a manual-bootstrap lab's Ignition keeps
// the installer's bootkube.service on the bootstrap node (the unit itself
// is masked).
const SavedBootkubeUnitPath = ignition.SavedBootkubeUnitPath

// HandoffCommand is what `stage handoff` runs on the bootstrap node of a
// manual-bootstrap lab. Ignition masks a unit by replacing its file with a
// /dev/null symlink, so unmasking alone leaves no unit: handoff puts the
// installer's unit back from SavedBootkubeUnitPath first. It lives with
// the lab, which made the node so, not with the command.
const HandoffCommand = "systemctl unmask bootkube.service" +
	" && if [ -f " + SavedBootkubeUnitPath + " ]; then install -m 0644 " + SavedBootkubeUnitPath + " /etc/systemd/system/bootkube.service; fi" +
	" && systemctl daemon-reload && systemctl start bootkube.service"
