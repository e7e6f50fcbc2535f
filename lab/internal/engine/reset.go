package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/bootlab/bootlab/lab/hypervisor"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// ResetNode resets node n's VM, as a power cut would, and on a probe lab
// records the reset in the lab state (labdir.ResetRecord): a reset writes
// no report, so `lab status` shows the node rebooting from the record
// until its next boot reports. It holds the lab's lock, so the record is
// never lost to another command's write of the state.
func ResetNode(ctx context.Context, hv hypervisor.Hypervisor, s *spec.Spec, n spec.Node) error {
	domain := s.DomainName(n)
	if s.Profile != spec.ProfileProbe {
		return hv.ResetDomain(ctx, domain)
	}
	return UpdateState(s, false, func(st *labdir.State) error {
		var boot time.Time
		if rep := lastReport(ctx, hv.Host(), labdir.ConsoleLog(s, n)); rep != nil {
			boot = rep.Boot
		}
		at := time.Now().UTC()
		if err := hv.ResetDomain(ctx, domain); err != nil {
			return fmt.Errorf("reset %s: %w", n.Name, err)
		}
		if st.Resets == nil {
			st.Resets = map[string]labdir.ResetRecord{}
		}
		st.Resets[n.Name] = labdir.ResetRecord{At: at, Boot: boot}
		return nil
	})
}
