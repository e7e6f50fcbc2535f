package create

import (
	"context"
	"errors"
	"fmt"
	"github.com/bootlab/bootlab/internal/kube"
	"io"
	"net/http"
	"strings"
	"time"
)

// Options tune Create.
type Options struct {
	// Interval is the pause between rounds: 200 ms by default, as
	// library-go's EnsureManifestsCreated.
	Interval time.Duration
	// Log receives cluster-bootstrap's lines: Created, Skipped, Updated
	// status, and each round's failures. Nil discards them.
	Log io.Writer
}

// Outcome is what became of a manifest.
type Outcome string

const (
	// Created: this run created the object.
	Created Outcome = "created"
	// Existed: the object was there already (skipped, as upstream).
	Existed Outcome = "skipped"
	// Failed: not created by the deadline, or refused for good.
	Failed Outcome = "failed"
)

// Object is one manifest's outcome.
type Object struct {
	Manifest
	Outcome Outcome
	// Resource is where it lives: configmaps.v1./NAME -n NAMESPACE, as
	// cluster-bootstrap prints it (empty when its kind was never served).
	Resource string
	// StatusSet is true when the manifest's status was written through the
	// status subresource (which a create ignores).
	StatusSet bool
	// Reason says why it failed.
	Reason string
}

// Result is the outcome of every manifest, in creation order.
type Result struct {
	Objects []Object
	// Rounds is how many passes over the manifests were made.
	Rounds int
}

// Count is how many objects had the outcome.
func (r *Result) Count(o Outcome) int {
	n := 0
	for _, obj := range r.Objects {
		if obj.Outcome == o {
			n++
		}
	}
	return n
}

// IncompleteError is Create's error when some manifests were not created.
type IncompleteError struct {
	Failed []Object
	// Cause is why it stopped: the deadline.
	Cause error
}

func (e *IncompleteError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d manifest(s) not created (%v):", len(e.Failed), e.Cause)
	for _, o := range e.Failed {
		fmt.Fprintf(&b, "\n  %q: %s", o.Source(), o.Reason)
	}
	return b.String()
}

// errRefused marks a failure the API (or the manifest itself) gives
// every round: the reason says so, though it is retried as every failure
// is, until the deadline.
var errRefused = errors.New("refused")

// Create creates the manifests, in their order (see Order), in rounds as
// cluster-bootstrap does: an object already there counts as done; a kind
// the API does not serve yet (its CRD is not Established) makes the next
// round ask discovery again; each round retries what is left, until all
// are done or ctx ends, an object the API refuses as invalid too (library-go
// pkg/assets/create/creater.go EnsureManifestsCreated retries every error
// until its context ends). The error, when some are left, is an
// *IncompleteError; the Result lists every outcome.
func Create(ctx context.Context, c *kube.Client, ms []Manifest, opts Options) (*Result, error) {
	if opts.Interval <= 0 {
		opts.Interval = 200 * time.Millisecond
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	run := &creation{c: c, m: newMapper(c), log: log, crds: crdsByKind(ms)}
	res := &Result{Objects: make([]Object, len(ms))}
	for i, m := range ms {
		res.Objects[i] = Object{Manifest: m, Outcome: Failed}
	}
	left := make([]int, len(ms))
	for i := range left {
		left[i] = i
	}
	lastReport := ""
	for len(left) > 0 {
		res.Rounds++
		var retry []int
		rediscover := false
		for _, i := range left {
			o := &res.Objects[i]
			err := run.one(ctx, o)
			if err == nil {
				continue
			}
			// A round cut short by the deadline keeps the reason the
			// object failed for before: that is the one worth reading.
			if ctx.Err() == nil || o.Reason == "" {
				o.Reason = run.explain(ctx, err)
			}
			var ns *NotServedError
			rediscover = rediscover || errors.As(err, &ns)
			retry = append(retry, i)
		}
		if report := roundReport(res, left); report != "" && report != lastReport {
			fmt.Fprintf(log, "[#%d] failed to create some manifests:\n%s", res.Rounds, report)
			lastReport = report
		}
		left = retry
		if len(left) == 0 {
			break
		}
		if rediscover {
			run.m.reset()
		}
		select {
		case <-ctx.Done():
			return res, &IncompleteError{Failed: failed(res), Cause: ctx.Err()}
		case <-time.After(opts.Interval):
		}
	}
	return res, nil
}

func failed(r *Result) []Object {
	var out []Object
	for _, o := range r.Objects {
		if o.Outcome == Failed {
			out = append(out, o)
		}
	}
	return out
}

func roundReport(r *Result, tried []int) string {
	var b strings.Builder
	for _, i := range tried {
		if o := r.Objects[i]; o.Outcome == Failed {
			fmt.Fprintf(&b, "%q: %s\n", o.Source(), o.Reason)
		}
	}
	return b.String()
}

// creation is one Create's state.
type creation struct {
	c   *kube.Client
	m   *mapper
	log io.Writer
	// crds maps group/Kind to the manifest of the CRD that defines it.
	crds map[string]Manifest
}

// one gets the object to exist with its status: look it up, create it when
// absent, then write the manifest's status when the object has none.
func (r *creation) one(ctx context.Context, o *Object) error {
	res, err := r.m.lookup(ctx, o.APIVersion, o.Kind)
	if err != nil {
		return err
	}
	if res.Namespaced && o.Namespace == "" {
		return fmt.Errorf("%w: %s is namespaced and the manifest has no metadata.namespace: set it", errRefused, o.Kind)
	}
	ns := o.Namespace
	if !res.Namespaced {
		ns = "" // kubectl create accepts a namespace on a cluster-scoped object, and so does cluster-bootstrap
	}
	coll := collectionPath(o.APIVersion, res, ns)
	o.Resource = resourceString(o.APIVersion, res.Plural, o.Name, ns)
	var inCluster map[string]any
	err = r.c.Do(ctx, http.MethodGet, coll+"/"+o.Name, nil, &inCluster)
	switch {
	case err == nil:
		if o.Outcome != Created {
			o.Outcome = Existed
			fmt.Fprintf(r.log, "Skipped %q %s as it already exists\n", o.Source(), o.Resource)
		}
	case !kube.IsNotFound(err):
		return fmt.Errorf("get: %w", err)
	default:
		err = r.c.Do(ctx, http.MethodPost, coll, o.Object, &inCluster)
		switch {
		case kube.IsAlreadyExists(err):
			o.Outcome = Existed
			fmt.Fprintf(r.log, "Skipped creating %q %s as it already exists\n", o.Source(), o.Resource)
			if err := r.c.Do(ctx, http.MethodGet, coll+"/"+o.Name, nil, &inCluster); err != nil {
				return fmt.Errorf("get: %w", err)
			}
		case kube.HasCode(err, http.StatusBadRequest) || kube.HasCode(err, http.StatusUnprocessableEntity):
			return fmt.Errorf("%w: %w", errRefused, err)
		case err != nil:
			return fmt.Errorf("create: %w", err)
		default:
			o.Outcome = Created
			fmt.Fprintf(r.log, "Created %q %s\n", o.Source(), o.Resource)
		}
	}
	return r.status(ctx, o, coll, inCluster)
}

// status writes the manifest's status through the status subresource when
// the object has none: a create drops status where the kind has that
// subresource (the installer's Infrastructure carries its status so).
func (r *creation) status(ctx context.Context, o *Object, coll string, inCluster map[string]any) error {
	want, ok := o.Object["status"]
	if !ok || o.StatusSet {
		return nil
	}
	if have, ok := inCluster["status"]; ok && !isEmpty(have) {
		return nil
	}
	inCluster["status"] = want
	err := r.c.Do(ctx, http.MethodPut, coll+"/"+o.Name+"/status", inCluster, nil)
	switch {
	case kube.IsNotFound(err):
		return nil // no status subresource: the create kept it
	case err != nil:
		return fmt.Errorf("update status: %w", err)
	}
	o.StatusSet = true
	fmt.Fprintf(r.log, "Updated status for %q %s\n", o.Source(), o.Resource)
	return nil
}

func isEmpty(v any) bool {
	m, ok := v.(map[string]any)
	return v == nil || ok && len(m) == 0
}

// explain turns a failure into the reason a learner reads: for a kind not
// served yet, whether a CRD among the manifests defines it and where that
// CRD is.
func (r *creation) explain(ctx context.Context, err error) string {
	var ns *NotServedError
	if !errors.As(err, &ns) {
		return err.Error()
	}
	group, _, _ := strings.Cut(ns.APIVersion, "/")
	crd, ok := r.crds[group+"/"+ns.Kind]
	if !ok {
		return err.Error() + ": no CRD among the manifests defines it (another component must)"
	}
	var got struct {
		Status struct {
			Conditions []struct{ Type, Status, Message string } `json:"conditions"`
		} `json:"status"`
	}
	if e := r.c.Do(ctx, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+crd.Name, nil, &got); e != nil {
		return fmt.Sprintf("%v: waiting for CRD %s (%q) to be created", err, crd.Name, crd.Source())
	}
	for _, c := range got.Status.Conditions {
		if c.Type == "Established" && c.Status == "True" {
			return fmt.Sprintf("%v: CRD %s is Established, asking discovery again", err, crd.Name)
		}
	}
	return fmt.Sprintf("%v: waiting for CRD %s to be Established", err, crd.Name)
}

// crdsByKind maps group/Kind to the CRD manifest that defines it.
func crdsByKind(ms []Manifest) map[string]Manifest {
	out := map[string]Manifest{}
	for _, m := range ms {
		if !m.IsCRD() {
			continue
		}
		spec, _ := m.Object["spec"].(map[string]any)
		names, _ := spec["names"].(map[string]any)
		group, _ := spec["group"].(string)
		kind, _ := names["kind"].(string)
		if group != "" && kind != "" {
			out[group+"/"+kind] = m
		}
	}
	return out
}

// resourceString names an object as cluster-bootstrap's log does:
// configmaps.v1./cluster-config-v1 -n kube-system.
func resourceString(apiVersion, plural, name, namespace string) string {
	group, version, found := strings.Cut(apiVersion, "/")
	if !found {
		group, version = "", apiVersion
	}
	return fmt.Sprintf("%s.%s.%s/%s -n %s", plural, version, group, name, namespace)
}

// Summary is the closing lines a learner reads: how many were created,
// skipped and failed, and why each failure failed.
func (r *Result) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d manifests: created %d, skipped %d (already there), failed %d, in %d round(s)\n",
		len(r.Objects), r.Count(Created), r.Count(Existed), r.Count(Failed), r.Rounds)
	for _, o := range r.Objects {
		if o.Outcome == Failed {
			fmt.Fprintf(&b, "  failed %s: %s\n", o, o.Reason)
		}
	}
	return b.String()
}
