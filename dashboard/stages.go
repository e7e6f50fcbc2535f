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

func catalogStages() []StageView { return StagesFromRecords(nil) }

// StagesFromRecords is stages.FoldRecords as the page shows it: the
// messages redacted (Sanitize).
func StagesFromRecords(recs []stages.Record) []StageView {
	var out []StageView
	for _, p := range stages.FoldRecords(recs) {
		out = append(out, StageView{Number: p.Number, Slug: p.Slug, State: string(p.State), Message: Sanitize(p.Message), Time: p.Time})
	}
	return out
}
