package ignition

import (
	"fmt"

	"github.com/coreos/ignition/v2/config/v3_2"
	"github.com/coreos/ignition/v2/config/v3_2/types"
)

// Validate parses data as a spec-3.2 Ignition config, as Ignition itself
// would, and returns an error listing every problem the parser reports.
func Validate(data []byte) error {
	_, err := Parse(data)
	return err
}

// Parse parses and validates a spec-3.2 Ignition config.
func Parse(data []byte) (types.Config, error) {
	cfg, rpt, err := v3_2.Parse(data)
	if err != nil {
		if !rpt.IsFatal() && len(rpt.Entries) == 0 {
			return types.Config{}, fmt.Errorf("invalid Ignition config: %w", err)
		}
		return types.Config{}, fmt.Errorf("invalid Ignition config: %w: %s", err, rpt.String())
	}
	if rpt.IsFatal() {
		return types.Config{}, fmt.Errorf("invalid Ignition config: %s", rpt.String())
	}
	return cfg, nil
}
