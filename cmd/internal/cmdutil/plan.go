package cmdutil

import (
	"fmt"

	"github.com/bootlab/bootlab/lab"
)

// WritePlan prints what a dry run found it would change, nothing changed:
// with -o json a document of kind (name, changed, changes), else the
// header and one line per change, or nothing when there is none.
func WritePlan(f *Factory, kind, output, name string, changes []lab.Change, nothing, header string) error {
	if changes == nil {
		changes = []lab.Change{}
	}
	if output == "json" {
		return WriteJSON(f.Streams.Out, kind, struct {
			Name    string       `json:"name"`
			Changed bool         `json:"changed"`
			Changes []lab.Change `json:"changes"`
		}{name, len(changes) > 0, changes})
	}
	if len(changes) == 0 {
		fmt.Fprintln(f.Streams.Out, nothing)
		return nil
	}
	fmt.Fprintln(f.Streams.Out, header)
	for _, c := range changes {
		fmt.Fprintf(f.Streams.Out, "  %s\n", c)
	}
	return nil
}
