package stages

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/bootlab/bootlab/internal/node"
)

// AssetDir is bootkube's working directory on the bootstrap node; every
// marker lives in it.
const AssetDir = "/opt/openshift"

// BootkubeDone is the marker of a finished bootkube: bootkube.service has
// ConditionPathExists=!/opt/openshift/.bootkube.done.
const BootkubeDone = ".bootkube.done"

// ImagesFile is where stage 02 keeps the resolved images (bootlab's own file).
const ImagesFile = AssetDir + "/bootlab-images.env"

// Step is one step of bootkube.sh. Named steps are bootkube's own stages,
// as they appear in /var/log/openshift/bootkube.json; steps in parentheses
// are unnamed work between them.
type Step struct {
	Name string `json:"name"`
	// Marker is the file in /opt/openshift bootkube writes when the step
	// succeeds; empty when bootkube writes none (the step runs every time).
	Marker string `json:"marker,omitempty"`
	// Optional markers are written only on success of a non-fatal check.
	Optional bool `json:"optional,omitempty"`
	// Since is the first release whose bootkube.sh has the step.
	Since Version `json:"-"`
	// History says when and why the step appeared (shown when it is skipped).
	History string `json:"-"`
}

// Stage is one numbered stage of the replay.
type Stage struct {
	Number int    `json:"number"`
	Slug   string `json:"slug"`
	// Script is the short verb name a learner may use: render-etcd.
	Script string `json:"script"`
	Short  string `json:"short"`
	Steps  []Step `json:"steps"`
	// Done lists the markers that together mean the stage is finished. A
	// stage without them runs every time, as bootkube reruns unmarked steps.
	Done []string `json:"done,omitempty"`
	// Checks validate what the stage produced, read back from the node.
	Checks []Check `json:"-"`
	// Gates are what changes by release, each with its evidence.
	Gates []Gate `json:"-"`
	// After is what runs once the stage has run, for the bootstrap
	// timeline picture (Timeline); zero fields mean "as after the stage
	// before".
	After After `json:"-"`
}

// After is what a stage leaves running and who answers through the load
// balancer, while the stage runs and after it.
type After struct {
	// Runs is what runs on the bootstrap node.
	Runs string
	// API and MCS say who answers 6443 (the Kubernetes API) and 22623 (the
	// Machine Config Server).
	API, MCS Server
	// RehearsalEtcd is the etcd membership on the rehearsal lab
	// (docs/rehearsal-lab.md), and EtcdHow how it came to be.
	RehearsalEtcd EtcdMembers
	EtcdHow       string
	// DuringEtcd is a membership the stage passes through before it ends
	// (stage 13: the masters join once its API answers, and the
	// bootstrap's member leaves at its end), and DuringEtcdHow how.
	DuringEtcd    EtcdMembers
	DuringEtcdHow string
}

// Server is who answers a port of the load balancer.
type Server string

const (
	ServedByNobody    Server = "nobody"
	ServedByBootstrap Server = "the bootstrap"
	// ServedByHandover: the bootstrap's temporary control plane, then the
	// masters' once cluster-bootstrap hands over.
	ServedByHandover Server = "the bootstrap, then the masters"
	ServedByMasters  Server = "the masters"
)

// EtcdMembers is who is in the etcd cluster.
type EtcdMembers string

const (
	EtcdNone                EtcdMembers = "no etcd yet"
	EtcdBootstrap           EtcdMembers = "etcd-bootstrap"
	EtcdBootstrapAndMasters EtcdMembers = "etcd-bootstrap and the masters"
	EtcdMasters             EtcdMembers = "the masters"
)

// ID is the two-digit stage number.
func (s *Stage) ID() string { return fmt.Sprintf("%02d", s.Number) }

// Label is "07 etcd-bootstrap", the prefix of streamed output.
func (s *Stage) Label() string { return s.ID() + " " + s.Slug }

// ScriptFile is the stage's script under scripts/.
func (s *Stage) ScriptFile() string { return s.ID() + "-" + s.Slug + ".sh" }

// DocFile is the stage's page under docs/stages/.
func (s *Stage) DocFile() string { return s.ID() + "-" + s.Slug + ".md" }

// Markers are every marker the stage's steps may write.
func (s *Stage) Markers() []string {
	var out []string
	for _, st := range s.Steps {
		if st.Marker != "" {
			out = append(out, st.Marker)
		}
	}
	return out
}

// MarkersFor are the markers the stage's steps may write in release v:
// steps newer than v write none.
func (s *Stage) MarkersFor(v Version) []string {
	var out []string
	for _, st := range s.Steps {
		if st.Marker != "" && (st.Since.IsZero() || !v.Less(st.Since)) {
			out = append(out, st.Marker)
		}
	}
	return out
}

// SkipReason says why the stage does not exist in release v, or "".
// A stage is skipped only when every named step is newer than v.
func (s *Stage) SkipReason(v Version) string {
	var missing []string
	for _, st := range s.Steps {
		if st.Since.IsZero() || !v.Less(st.Since) {
			return ""
		}
		missing = append(missing, fmt.Sprintf("%s arrived in %s (%s)", st.Name, st.Since, st.History))
	}
	return fmt.Sprintf("OpenShift %s has no such step: %s", v, strings.Join(missing, "; "))
}

// RunIf decides whether the stage has work left on the node: false when
// every Done marker exists (the bootkube .done files).
func (s *Stage) RunIf(ctx context.Context, n node.Node) (bool, string, error) {
	return s.runIf(func(m string) (bool, error) {
		_, err := n.Stat(ctx, path.Join(AssetDir, m))
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("check marker %s: %w", m, err)
		}
		return true, nil
	})
}

// runIf is RunIf over has, which says whether a marker exists.
func (s *Stage) runIf(has func(m string) (bool, error)) (bool, string, error) {
	if len(s.Done) == 0 {
		return true, "no marker: runs every time, as in bootkube", nil
	}
	for _, m := range s.Done {
		ok, err := has(m)
		if err != nil {
			return false, "", err
		}
		if !ok {
			return true, m + " is missing", nil
		}
	}
	if len(s.Done) == 1 {
		return false, s.Done[0] + " exists", nil
	}
	return false, strings.Join(s.Done, ", ") + " exist", nil
}

// Catalog is the ordered list of stages.
type Catalog []*Stage

// Lookup finds a stage by number ("7", "07"), slug ("etcd-bootstrap"),
// script name ("render-etcd"), file name ("07-etcd-bootstrap.sh") or the
// bootkube name of any of its steps ("node-tuning-bootstrap").
func (c Catalog) Lookup(arg string) (*Stage, error) {
	a := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(arg), ".sh"), ".md")
	if n, err := strconv.Atoi(a); err == nil {
		for _, s := range c {
			if s.Number == n {
				return s, nil
			}
		}
		return nil, fmt.Errorf("no stage %q: stages are numbered 01 to %02d (see `bootlab stage list`)", arg, len(c))
	}
	for _, s := range c {
		if a == s.Slug || a == s.Script || a == s.ID()+"-"+s.Slug {
			return s, nil
		}
	}
	for _, s := range c {
		for _, st := range s.Steps {
			if a == st.Name || a+".done" == st.Marker {
				return s, nil
			}
		}
	}
	return nil, fmt.Errorf("no stage %q: give a number, a bootkube stage name or a script name (see `bootlab stage list`)", arg)
}

// PartOf says, when arg names one step of s but not s itself (a number,
// slug, script or file name), which other bootkube steps share the stage:
// "cco-bootstrap" is one of four steps of stage 12. It is empty when arg
// names the whole stage or s has a single named step.
func (s *Stage) PartOf(arg string) []string {
	a := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(arg), ".sh"), ".md")
	if _, err := strconv.Atoi(a); err == nil || a == s.Slug || a == s.Script || a == s.ID()+"-"+s.Slug {
		return nil
	}
	var named []string
	for _, st := range s.Steps {
		if !strings.HasPrefix(st.Name, "(") {
			named = append(named, st.Name)
		}
	}
	if len(named) < 2 {
		return nil
	}
	return named
}

// Default returns the catalog of bootkube.sh for OpenShift 4.16 through 4.22.
func Default() Catalog {
	c := append(append(renderStages(), controlPlaneStages()...), handoffStages()...)
	gates := releaseGates()
	for _, s := range c {
		s.Gates = gates[s.Number]
	}
	return c
}

// v419 and v422 are the releases steps came in with (Step.Since).
var v419, v422 = Version{4, 19}, Version{4, 22}

// konnectivityHistory says where the konnectivity steps come from: they
// run only where the installer enables them.
const konnectivityHistory = "installer #10344 (CORS-4334), 2026; only when the installer enables konnectivity"

// renderStages are stages 01 to 07: the directories, the release's
// images, then the renders up to etcd's, which stage 07 starts.
func renderStages() Catalog {
	return Catalog{
		{
			Number: 1, Slug: "openshift-manifests", Script: "move-manifests",
			Short: "Make bootkube's directories and merge the installer's openshift/ manifests into manifests/",
			Steps: []Step{
				{Name: "(prelude: mkdir /etc/kubernetes/{manifests,bootstrap-configs,bootstrap-manifests})"},
				{Name: "openshift-manifests", Marker: "openshift-manifests.done"},
			},
			Done:   []string{"openshift-manifests.done"},
			Checks: checksOpenShiftManifests(),
			After:  After{Runs: "nothing yet: stages 01-06 render files", API: ServedByNobody, MCS: ServedByNobody, RehearsalEtcd: EtcdNone},
		},
		{
			Number: 2, Slug: "release-image", Script: "image-for",
			Short: "Resolve every component image (image_for), VERSION and (4.18+) KUBERNETES_VERSION from the release payload",
			Steps: []Step{
				{Name: "(image_for: component images from the release payload)"},
				{Name: "(VERSION, and from 4.18 KUBERNETES_VERSION: oc adm release info)"},
			},
			Checks: checksReleaseImage(),
		},
		{
			Number: 3, Slug: "api-bootstrap", Script: "render-api",
			Short: "Render the openshift/api CRDs and resolve the feature gates for this payload",
			Steps: []Step{{Name: "api-bootstrap", Marker: "api-bootstrap.done"}},
			Done:  []string{"api-bootstrap.done"}, Checks: checksAPIBootstrap(),
		},
		{
			Number: 4, Slug: "auth-api-bootstrap", Script: "render-auth-api",
			Short: "Render the RoleBindingRestriction CRD so admission does not block system RoleBindings",
			Steps: []Step{{Name: "auth-api-bootstrap", Marker: "auth-api-bootstrap.done",
				Since: v419, History: "installer 9d0ac1673b, 2025-02"}},
			Done: []string{"auth-api-bootstrap.done"}, Checks: checksAuthAPI(),
		},
		{
			Number: 5, Slug: "config-bootstrap", Script: "render-config",
			Short: "Render the cluster config with the cluster-config-operator",
			Steps: []Step{{Name: "config-bootstrap", Marker: "config-bootstrap.done"}},
			Done:  []string{"config-bootstrap.done"}, Checks: checksConfig(),
		},
		{
			Number: 6, Slug: "cvo-bootstrap", Script: "render-cvo",
			Short: "Render the bootstrap cluster-version-operator pod from the release image",
			Steps: []Step{{Name: "cvo-bootstrap", Marker: "cvo-bootstrap.done"}},
			Done:  []string{"cvo-bootstrap.done"}, Checks: checksCVO(),
		},
		{
			Number: 7, Slug: "etcd-bootstrap", Script: "render-etcd",
			Short: "Render etcd and its certificates; the bootstrap etcd member starts",
			Steps: []Step{{Name: "etcd-bootstrap", Marker: "etcd-bootstrap.done"}},
			Done:  []string{"etcd-bootstrap.done"}, Checks: checksEtcd(),
			After: After{Runs: "etcd (the etcd-bootstrap member pod)", RehearsalEtcd: EtcdBootstrap,
				EtcdHow: "the kubelet starts the member pod stage 07 rendered"},
		},
	}
}

// controlPlaneStages are stages 08 to 12: the temporary control plane's
// renders, then the machine-config server.
func controlPlaneStages() Catalog {
	return Catalog{
		{
			Number: 8, Slug: "kube-apiserver-bootstrap", Script: "render-kube-apiserver",
			Short: "Render the bootstrap kube-apiserver pod, its config and core manifests (4.22+: start the konnectivity server first)",
			Steps: []Step{
				{Name: "konnectivity-certs", Marker: "konnectivity-certs.done", Since: v422, History: konnectivityHistory},
				{Name: "konnectivity-server-bootstrap", Marker: "konnectivity-server-bootstrap.done", Since: v422, History: konnectivityHistory},
				{Name: "konnectivity-agent-manifest", Marker: "konnectivity-agent-manifest.done", Since: v422, History: konnectivityHistory},
				{Name: "kube-apiserver-bootstrap", Marker: "kube-apiserver-bootstrap.done"},
			},
			Done: []string{"kube-apiserver-bootstrap.done"}, Checks: checksKAS(),
		},
		{
			Number: 9, Slug: "kube-controller-manager-bootstrap", Script: "render-kube-controller-manager",
			Short: "Render the bootstrap kube-controller-manager pod with the cluster-policy-controller",
			Steps: []Step{{Name: "kube-controller-manager-bootstrap", Marker: "kube-controller-manager-bootstrap.done"}},
			Done:  []string{"kube-controller-manager-bootstrap.done"}, Checks: checksKCM(),
		},
		{
			Number: 10, Slug: "kube-scheduler-bootstrap", Script: "render-kube-scheduler",
			Short: "Render the bootstrap kube-scheduler pod and config",
			Steps: []Step{{Name: "kube-scheduler-bootstrap", Marker: "kube-scheduler-bootstrap.done"}},
			Done:  []string{"kube-scheduler-bootstrap.done"}, Checks: checksScheduler(),
		},
		{
			Number: 11, Slug: "ingress-operator-bootstrap", Script: "render-ingress-node-tuning",
			Short: "Render the ingress operator's CRD and namespace, then the node tuning manifests",
			Steps: []Step{
				{Name: "ingress-operator-bootstrap", Marker: "ingress-operator-bootstrap.done"},
				{Name: "node-tuning-bootstrap", Marker: "node-tuning-bootstrap.done"},
			},
			Done:   []string{"ingress-operator-bootstrap.done", "node-tuning-bootstrap.done"},
			Checks: checksIngress(),
		},
		{
			Number: 12, Slug: "mco-bootstrap", Script: "start-mcs",
			Short: "Render the MCO and start the bootstrap MCS on 22623; check the API names resolve; render the CCO",
			Steps: []Step{
				{Name: "mco-bootstrap", Marker: "mco-bootstrap.done"},
				{Name: "resolve-api-url", Marker: "api-dns-resolved.done", Optional: true},
				{Name: "resolve-api-int-url", Marker: "api-int-dns-resolved.done", Optional: true},
				{Name: "cco-bootstrap", Marker: "cco-bootstrap.done"},
			},
			Done:   []string{"mco-bootstrap.done", "cco-bootstrap.done"},
			Checks: checksMCO(),
			After:  After{Runs: "etcd, the bootstrap MCS", MCS: ServedByBootstrap},
		},
	}
}

// handoffStages are stages 13 to 15: cluster-bootstrap, the hand-over
// to the masters and the last checks.
func handoffStages() Catalog {
	return Catalog{
		{
			Number: 13, Slug: "cb-bootstrap", Script: "start-bootstrap",
			Short: "Wait for etcd, then cluster-bootstrap start: temporary control plane up, manifests created, hand-over",
			Steps: []Step{
				{Name: "wait-for-etcd"},
				{Name: "cb-bootstrap", Marker: "cb-bootstrap.done"},
			},
			Done:   []string{"cb-bootstrap.done"},
			Checks: checksClusterBootstrap(),
			After: After{Runs: "etcd, the MCS, the temporary control plane until the hand-over", API: ServedByHandover,
				DuringEtcd:    EtcdBootstrapAndMasters,
				DuringEtcdHow: "once its API answers, the etcd operator adds each master (config from the MCS): member add --learner, then promote",
				RehearsalEtcd: EtcdBootstrapAndMasters, EtcdHow: "etcd-bootstrap stays a member: cluster-bootstrap does not write kube-system/bootstrap"},
		},
		{
			Number: 14, Slug: "cvo-overrides", Script: "wait-for-ceo",
			Short: "Remove the bootstrap konnectivity (4.22+), restore the CVO overrides, stop the bootstrap MCS, wait for the etcd operator",
			Steps: []Step{
				{Name: "konnectivity-cleanup", Marker: "konnectivity-cleanup.done", Since: v422, History: konnectivityHistory},
				{Name: "cvo-overrides", Marker: "cvo-overrides.done"},
				{Name: "(rm /etc/kubernetes/manifests/machineconfigoperator-bootstrap-pod.yaml)"},
				{Name: "wait-for-ceo"},
			},
			Done:   []string{BootkubeDone},
			Checks: checksCVOOverrides(),
			After:  After{Runs: "the MCS pod removed; wait-for-ceo until EtcdRunningInCluster (etcd-bootstrap still a member)", API: ServedByMasters, MCS: ServedByMasters},
		},
		{
			Number: 15, Slug: "check-api-url", Script: "complete",
			Short: "Check api and api-int answer /readyz, then write .bootkube.done",
			Steps: []Step{
				{Name: "check-api-url", Marker: "api-dns-check.done", Optional: true},
				{Name: "check-api-int-url", Marker: "api-int-dns-check.done", Optional: true},
				{Name: "(touch /opt/openshift/.bootkube.done)", Marker: BootkubeDone},
			},
			Done:   []string{BootkubeDone},
			Checks: checksComplete(),
			After: After{Runs: "nothing: .bootkube.done written; progress.service creates kube-system/bootstrap",
				RehearsalEtcd: EtcdMasters, EtcdHow: "progress.service (report-progress.sh) creates kube-system/bootstrap after .bootkube.done: the etcd operator's teardown removes etcd-bootstrap"},
		},
	}
}
