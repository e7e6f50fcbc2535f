package create

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/bootlab/bootlab/internal/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// resource is where the API serves a kind.
type resource struct {
	// Plural is the resource's name in the URL: configmaps.
	Plural     string
	Namespaced bool
}

// NotServedError says the API does not serve a kind (yet): its group
// version is not in discovery, or is without that kind.
type NotServedError struct {
	APIVersion, Kind string
	// GroupVersionServed is true when the group version is served but
	// without the kind.
	GroupVersionServed bool
}

func (e *NotServedError) Error() string {
	if e.GroupVersionServed {
		return fmt.Sprintf("the API serves %s but not kind %s", e.APIVersion, e.Kind)
	}
	return fmt.Sprintf("the API does not serve %s (kind %s) yet", e.APIVersion, e.Kind)
}

// mapper maps a kind to its resource through discovery (/api/v1,
// /apis/GROUP/VERSION), one group version at a time, cached until reset:
// a kind that appears (its CRD became Established) is seen after a reset.
type mapper struct {
	c *kube.Client
	// lists holds each group version asked; nil when it is not served.
	lists map[string]*metav1.APIResourceList
}

func newMapper(c *kube.Client) *mapper {
	return &mapper{c: c, lists: map[string]*metav1.APIResourceList{}}
}

// reset forgets what discovery said, to ask again.
func (m *mapper) reset() { clear(m.lists) }

func (m *mapper) lookup(ctx context.Context, apiVersion, kind string) (resource, error) {
	l, asked := m.lists[apiVersion]
	if !asked {
		l = &metav1.APIResourceList{}
		err := m.c.Do(ctx, http.MethodGet, groupVersionPath(apiVersion), nil, l)
		switch {
		case kube.IsNotFound(err):
			l = nil
		case err != nil:
			return resource{}, fmt.Errorf("discovery: %w", err)
		}
		m.lists[apiVersion] = l
	}
	if l == nil {
		return resource{}, &NotServedError{APIVersion: apiVersion, Kind: kind}
	}
	for _, r := range l.APIResources {
		if r.Kind == kind && !strings.Contains(r.Name, "/") {
			return resource{Plural: r.Name, Namespaced: r.Namespaced}, nil
		}
	}
	return resource{}, &NotServedError{APIVersion: apiVersion, Kind: kind, GroupVersionServed: true}
}

// groupVersionPath is where a group version is served: the core group
// (apiVersion v1) under /api, every other under /apis.
func groupVersionPath(apiVersion string) string {
	if !strings.Contains(apiVersion, "/") {
		return "/api/" + apiVersion
	}
	return "/apis/" + apiVersion
}

// collectionPath is the URL path of a kind's objects in a namespace (or
// cluster-wide for a cluster-scoped kind or namespace "").
func collectionPath(apiVersion string, r resource, namespace string) string {
	p := groupVersionPath(apiVersion)
	if r.Namespaced && namespace != "" {
		p += "/namespaces/" + namespace
	}
	return p + "/" + r.Plural
}
