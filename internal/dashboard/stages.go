package dashboard

import (
	"os"
	"path/filepath"

	"github.com/bootlab/bootlab/stages"
)

// stages folds the stage records of the lab whose state has labUUID
// (records.jsonl in its stage log directory; another lab's records are left
// out, as stages.ReadRecords says) into one state per catalog stage. The
// file is read again only when it, or the lab, changed.
func (c *Collector) stages(dir, labUUID string) []StageView {
	path := filepath.Join(dir, stages.RecordsFile)
	fi, err := os.Stat(path)
	if err != nil {
		return catalogStages()
	}
	c.mu.Lock()
	cached, ok := c.records[path]
	c.mu.Unlock()
	if ok && cached.labUUID == labUUID && cached.size == fi.Size() && cached.modTime.Equal(fi.ModTime()) {
		return cached.stages
	}
	recs, err := stages.ReadRecords(dir, labUUID)
	if err != nil {
		return catalogStages()
	}
	out := StagesFromRecords(recs)
	c.mu.Lock()
	if c.records == nil {
		c.records = map[string]recordsCache{}
	}
	c.records[path] = recordsCache{labUUID: labUUID, size: fi.Size(), modTime: fi.ModTime(), stages: out}
	c.mu.Unlock()
	return out
}

func catalogStages() []StageView {
	var out []StageView
	for _, s := range stages.Default() {
		out = append(out, StageView{Number: s.Number, Slug: s.Slug, State: StagePending})
	}
	return out
}

// StagesFromRecords folds one lab's stage records (stages.ReadRecords,
// oldest first) into the state of each catalog stage: the last event wins.
func StagesFromRecords(recs []stages.Record) []StageView {
	out := catalogStages()
	idx := map[int]int{}
	for i, s := range out {
		idx[s.Number] = i
	}
	for _, r := range recs {
		i, ok := idx[r.Number]
		if !ok {
			continue
		}
		sv := &out[i]
		sv.Time = r.Timestamp
		switch {
		case r.Phase == stages.PhaseStart:
			sv.State, sv.Message = StageRunning, ""
		case r.Phase == stages.PhaseSkip || r.Result == stages.ResultSkipped:
			sv.State, sv.Message = StageSkipped, Sanitize(r.Reason)
		case r.Result == stages.ResultSuccess:
			sv.State, sv.Message = StageDone, ""
		case r.Result == stages.ResultFailure:
			msg := r.ErrorMessage
			if msg == "" {
				msg = r.ErrorLine
			}
			sv.State, sv.Message = StageFailed, Sanitize(msg)
		}
	}
	return out
}
