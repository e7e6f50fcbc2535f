package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
	"github.com/bootlab/bootlab/stages"
)

// fromHost fills what the bootstrap did not show from the host's stage
// log (labdir.Stages): bootkube.service as bootlab plays it is the stages'
// output (its journal) and their records (its service record, and
// release-image.service's from stage 02's).
func (r *nodeRun) fromHost() error {
	dir := labdir.Stages(r.g.s)
	uuid := ""
	if r.g.st != nil {
		uuid = r.g.st.UUID
	}
	recs, err := stages.ReadRecords(dir, uuid)
	if err != nil {
		r.g.w.Note("bootstrap/services", err.Error())
	}
	recs = recordsOf(recs, r.n.Name)
	var rel []stages.Record
	var bk []stages.Record
	for _, rec := range recs {
		if rec.Number == releaseImageStage {
			rel = append(rel, rec)
		} else {
			bk = append(bk, rec)
		}
	}
	for _, svc := range []struct {
		name string
		recs []stages.Record
	}{{"bootkube", bk}, {"release-image", rel}} {
		file := "bootstrap/services/" + svc.name + ".json"
		if r.seen[file] || len(svc.recs) == 0 {
			continue
		}
		if _, err := r.g.w.AddJSON(file, serviceRecord(svc.recs)); err != nil {
			return err
		}
	}
	return r.stageOutput(filepath.Join(dir, stages.OutputFile), recs)
}

// releaseImageStage is the stage that plays release-image.service.
const releaseImageStage = 2

// recordsOf are the records of stages run on node (or naming none).
func recordsOf(recs []stages.Record, node string) []stages.Record {
	var out []stages.Record
	for _, r := range recs {
		if r.Node == "" || r.Node == node {
			out = append(out, r)
		}
	}
	return out
}

// serviceEntry is one entry of a service record, as the installer's
// bootstrap-service-record.sh writes it.
type serviceEntry struct {
	Timestamp    string `json:"timestamp"`
	Phase        string `json:"phase"`
	Stage        string `json:"stage,omitempty"`
	Result       string `json:"result,omitempty"`
	ErrorLine    string `json:"errorLine,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// serviceRecord is a service's record made of its stages' records: a
// service start before the first stage and after each failure (the unit
// restarts), a service end after the last stage of the catalog or a
// failure (record_service_exit carries the stage's error).
func serviceRecord(recs []stages.Record) []serviceEntry {
	last := stages.Default()[len(stages.Default())-1].Number
	out := []serviceEntry{}
	running := false
	for _, r := range recs {
		ts := r.Timestamp.UTC().Format(time.RFC3339)
		if r.Phase == stages.PhaseSkip {
			continue
		}
		if !running {
			out = append(out, serviceEntry{Timestamp: ts, Phase: "service start"})
			running = true
		}
		e := serviceEntry{Timestamp: ts, Phase: r.Phase, Stage: r.Stage, Result: string(r.Result), ErrorLine: r.ErrorLine, ErrorMessage: r.ErrorMessage}
		out = append(out, e)
		switch {
		case r.Phase == stages.PhaseEnd && (r.Result == stages.ResultFailure || r.Result == stages.ResultInterrupted):
			out = append(out, serviceEntry{Timestamp: ts, Phase: "service end", Result: "failure", ErrorLine: r.ErrorLine, ErrorMessage: r.ErrorMessage})
			running = false
		case r.Phase == stages.PhaseEnd && r.Result == stages.ResultSuccess && (r.Number == last || r.Number == releaseImageStage):
			out = append(out, serviceEntry{Timestamp: ts, Phase: "service end", Result: "success"})
			running = false
		}
	}
	return out
}

// stageLabel is the prefix the runner puts on each output line: "[07 etcd-bootstrap] ".
var stageLabel = regexp.MustCompile(`^\[(\d{2}) ([a-z0-9-]+)\] `)

// stageOutput writes each stage's output as a pod log and, where the node
// kept no journal of bootkube, the stages' output as bootkube.service's
// journal (journalctl's short form, each line at the start of the stage
// run that printed it).
func (r *nodeRun) stageOutput(file string, recs []stages.Record) error {
	const journal = "bootstrap/journals/bootkube.log"
	f, err := os.Open(file)
	if err != nil {
		if r.seen[journal] {
			return nil
		}
		if os.IsNotExist(err) {
			err = fmt.Errorf("no stage has run yet: the host's stage log %s does not exist", file)
		}
		r.g.w.Note(journal, err.Error())
		return nil
	}
	defer f.Close()
	starts := map[int][]time.Time{}
	for _, rec := range recs {
		if rec.Phase == stages.PhaseStart {
			starts[rec.Number] = append(starts[rec.Number], rec.Timestamp.UTC())
		}
	}
	j, pods, order := journalOf(f, r.n.Name, starts, r.g.limits().File)
	// A node that keeps bootkube's journal (a rehearsal bootstrap's
	// journalctl) gave its own, with each line's own time.
	if !r.seen[journal] {
		if _, err := r.g.w.Add(journal, j); err != nil {
			return err
		}
	}
	for _, label := range order {
		if _, err := r.g.w.Add("bootstrap/pods/"+label+".log", pods[label].Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// journalOf reads the stage log's output lines: the journal, the lines of
// each stage (by "NN-slug", in the order first seen). The k-th block of a
// stage's lines is its k-th run.
func journalOf(f *os.File, host string, starts map[int][]time.Time, limit int64) ([]byte, map[string]*bytes.Buffer, []string) {
	j := &tailBuffer{max: 2 * limit}
	pods := map[string]*bytes.Buffer{}
	var order []string
	runs := map[int]int{}
	prev, label, num := "", "", 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := stageLabel.FindStringSubmatch(line); m != nil {
			fmt.Sscanf(m[1], "%d", &num)
			label, line = m[1]+"-"+m[2], line[len(m[0]):]
			if label != prev {
				runs[num]++
			}
			prev = label
		}
		if label == "" {
			continue
		}
		var at time.Time
		if ts := starts[num]; len(ts) > 0 {
			at = ts[min(runs[num], len(ts))-1]
		}
		fmt.Fprintf(j, "%s %s bootkube.sh[0]: %s\n", at.Format("Jan 02 15:04:05"), host, line)
		if pods[label] == nil {
			pods[label] = &bytes.Buffer{}
			order = append(order, label)
		}
		if int64(pods[label].Len()) < limit {
			pods[label].WriteString(line + "\n")
		}
	}
	return j.buf.Bytes(), pods, order
}

// gatherResources are the API objects the installer's gather keeps that
// a diagnosis reads, or a person does: never a Secret.
var gatherResources = []struct{ file, path string }{
	{"nodes.json", "/api/v1/nodes"},
	{"csr.json", "/apis/certificates.k8s.io/v1/certificatesigningrequests"},
	{"clusteroperators.json", "/apis/config.openshift.io/v1/clusteroperators"},
	{"configmaps.json", "/api/v1/namespaces/openshift-etcd/configmaps"},
	{"pods.json", "/api/v1/pods"},
	{"events.json", "/api/v1/events"},
}

// resources are the API's objects, where the API answers.
func (g *gatherer) resources(ctx context.Context) error {
	if g.src.API == nil {
		g.w.Note("resources", fmt.Sprintf("a %s lab runs no Kubernetes API", g.s.Profile))
		return nil
	}
	api, err := g.src.API(ctx)
	if err != nil {
		g.w.Note("resources", "the API did not answer: "+err.Error())
		return nil
	}
	if err := g.w.Dir("resources"); err != nil {
		return err
	}
	for _, res := range gatherResources {
		if !g.w.Wants("resources/" + res.file) {
			continue
		}
		var raw json.RawMessage
		if err := api.Get(ctx, res.path, &raw); err != nil {
			g.w.Note("resources/"+res.file, "GET "+res.path+": "+err.Error())
			continue
		}
		var out bytes.Buffer
		if json.Indent(&out, raw, "", "    ") != nil {
			out.Reset()
			out.Write(raw)
		}
		out.WriteByte('\n')
		if _, err := g.w.Add("resources/"+res.file, out.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// loadBalancer is bootlab/loadbalancer.json: haproxy's state.
func (g *gatherer) loadBalancer(ctx context.Context) error {
	const file = "bootlab/loadbalancer.json"
	if g.src.LoadBalancer == nil {
		g.w.Note(file, "the load balancer's state was not read")
		return nil
	}
	lb, err := g.src.LoadBalancer(ctx)
	if err != nil {
		g.w.Note(file, "haproxy's state: "+err.Error())
		return nil
	}
	_, err = g.w.AddJSON(file, lb)
	return err
}

// verify is bootlab/verify.json: the last `lab verify` as its record keeps
// it, with its failed checks as `lab verify -o json` lists checks.
func (g *gatherer) verify(context.Context) error {
	const file = "bootlab/verify.json"
	v := g.src.Verify
	if !g.w.Wants(file) {
		return nil
	}
	if v == nil {
		g.w.Note(file, "the lab was never verified: `bootlab lab verify` records a verify")
		return nil
	}
	type check struct {
		Group  string `json:"group"`
		Name   string `json:"name"`
		State  string `json:"state"`
		Detail string `json:"detail"`
	}
	out := struct {
		labdir.VerifyRecord
		Checks []check `json:"checks"`
	}{VerifyRecord: *v, Checks: []check{}}
	for _, f := range v.Failed {
		out.Checks = append(out.Checks, check{Group: f.Group, Name: f.Name, State: "failed", Detail: f.Detail})
	}
	_, err := g.w.AddJSON(file, out)
	return err
}

// clockFile is bootlab/clocks.json: the clocks read from each node.
func (g *gatherer) clockFile(context.Context) error {
	if len(g.clocks) == 0 {
		return nil
	}
	_, err := g.w.AddJSON("bootlab/clocks.json", struct {
		Nodes []gatherClock `json:"nodes"`
	}{g.clocks})
	return err
}

// consoles are the nodes' console logs (the agent's reports among them)
// as the host keeps them: bootlab/console/<node>.log.
func (g *gatherer) consoles(ctx context.Context) error {
	if g.src.Console == nil {
		return nil
	}
	for _, n := range g.s.Nodes {
		rel := "bootlab/console/" + n.Name + ".log"
		if !g.w.Wants(rel) {
			continue
		}
		out := &tailBuffer{max: 2 * g.limits().File}
		if err := g.src.Console(ctx, n, out); err != nil {
			g.w.Note(rel, err.Error())
			continue
		}
		if _, err := g.w.Add(rel, out.buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// stageRecords is the host's stage records as they are (bootlab/stages/).
func (g *gatherer) stageRecords(context.Context) error {
	if g.s.Profile == spec.ProfileOpenShift || !g.w.Wants("bootlab/stages/records.jsonl") {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(labdir.Stages(g.s), stages.RecordsFile))
	if err != nil {
		return nil // none yet: the journal's note says so
	}
	_, err = g.w.Add("bootlab/stages/records.jsonl", data)
	return err
}
