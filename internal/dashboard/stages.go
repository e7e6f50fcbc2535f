package dashboard

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/bootlab/bootlab/stages"
)

// stages folds the lab's stage records (records.jsonl in its stage log
// directory) into one state per catalog stage. The file is read again only
// when it changed.
func (c *Collector) stages(dir string) []StageView {
	path := filepath.Join(dir, stages.RecordsFile)
	fi, err := os.Stat(path)
	if err != nil {
		return catalogStages()
	}
	c.mu.Lock()
	cached, ok := c.records[path]
	c.mu.Unlock()
	if ok && cached.size == fi.Size() && cached.modTime.Equal(fi.ModTime()) {
		return cached.stages
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return catalogStages()
	}
	out := StagesFromRecords(data)
	c.mu.Lock()
	if c.records == nil {
		c.records = map[string]recordsCache{}
	}
	c.records[path] = recordsCache{size: fi.Size(), modTime: fi.ModTime(), stages: out}
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

// StagesFromRecords folds stage records (one JSON object a line, oldest
// first) into the state of each catalog stage: the last event wins.
func StagesFromRecords(data []byte) []StageView {
	out := catalogStages()
	idx := map[int]int{}
	for i, s := range out {
		idx[s.Number] = i
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		var r stages.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue
		}
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
