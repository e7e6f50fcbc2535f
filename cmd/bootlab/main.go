// Command bootlab builds OpenShift UPI labs on libvirt and replays the
// bootstrap node's bootkube.sh stage by stage.
package main

import (
	"os"

	"github.com/bootlab/bootlab/cmd/internal/app"
)

func main() { os.Exit(app.Main()) }
