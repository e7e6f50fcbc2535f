package diagnose

import (
	"encoding/json"
	"strings"
	"time"
)

// resources are the API objects the gather saved (resources/*.json, `oc
// get -o json` through the bootstrap's kubeconfig): what the checks read
// of them. A file that is missing or not a list leaves its part nil.
type resources struct {
	nodesFile *File
	nodes     []nodeObj
	csrFile   *File
	csrs      []csrObj
	cmFile    *File
	// endpoints is openshift-etcd/etcd-endpoints, nil when absent.
	endpoints *endpointsObj
	// cmRead is true when configmaps.json was read as a list.
	cmRead   bool
	coFile   *File
	degraded []coObj
}

type meta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace"`
	CreationTimestamp time.Time         `json:"creationTimestamp"`
	Labels            map[string]string `json:"labels"`
	Annotations       map[string]string `json:"annotations"`
}

type condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// nodeObj is a Node: name, master or not, Ready, its internal address.
type nodeObj struct {
	Metadata meta `json:"metadata"`
	Status   struct {
		Conditions []condition `json:"conditions"`
		Addresses  []struct {
			Type    string `json:"type"`
			Address string `json:"address"`
		} `json:"addresses"`
	} `json:"status"`
}

func (n nodeObj) master() bool {
	_, m := n.Metadata.Labels["node-role.kubernetes.io/master"]
	_, cp := n.Metadata.Labels["node-role.kubernetes.io/control-plane"]
	return m || cp
}

func (n nodeObj) internalIP() string {
	for _, a := range n.Status.Addresses {
		if a.Type == "InternalIP" {
			return a.Address
		}
	}
	return ""
}

// csrObj is a CertificateSigningRequest: who asked, and whether anyone
// approved or denied it.
type csrObj struct {
	Metadata meta `json:"metadata"`
	Spec     struct {
		Username   string `json:"username"`
		SignerName string `json:"signerName"`
	} `json:"spec"`
	Status struct {
		Conditions []condition `json:"conditions"`
	} `json:"status"`
}

func (c csrObj) pending() bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == "Approved" || cond.Type == "Denied" || cond.Type == "Failed" {
			return false
		}
	}
	return true
}

// endpointsObj is the etcd operator's etcd-endpoints ConfigMap: data maps
// each voting member's ID to its IP; the bootstrap member is an
// annotation.
type endpointsObj struct {
	members     map[string]string
	bootstrapIP string
	line        int
}

// coObj is a ClusterOperator that is Degraded.
type coObj struct {
	name, message string
	line          int
}

type list[T any] struct {
	Items []T `json:"items"`
}

// readResources reads the API objects of the bundle.
func readResources(b *Bundle) resources {
	var r resources
	if f := b.File("resources/nodes.json"); f != nil {
		var l list[nodeObj]
		if json.Unmarshal(f.Data(), &l) == nil {
			r.nodesFile, r.nodes = f, l.Items
		}
	}
	if f := b.File("resources/csr.json"); f != nil {
		var l list[csrObj]
		if json.Unmarshal(f.Data(), &l) == nil {
			r.csrFile, r.csrs = f, l.Items
		}
	}
	if f := b.File("resources/configmaps.json"); f != nil {
		r.readEndpoints(f)
	}
	if f := b.File("resources/clusteroperators.json"); f != nil {
		r.readOperators(f)
	}
	return r
}

func (r *resources) readEndpoints(f *File) {
	var l list[struct {
		Metadata meta              `json:"metadata"`
		Data     map[string]string `json:"data"`
	}]
	if json.Unmarshal(f.Data(), &l) != nil {
		return
	}
	r.cmFile, r.cmRead = f, true
	for _, cm := range l.Items {
		if cm.Metadata.Namespace == "openshift-etcd" && cm.Metadata.Name == "etcd-endpoints" {
			r.endpoints = &endpointsObj{members: cm.Data,
				bootstrapIP: cm.Metadata.Annotations["alpha.installer.openshift.io/etcd-bootstrap"],
				line:        nameLine(f, "etcd-endpoints")}
		}
	}
}

func (r *resources) readOperators(f *File) {
	var l list[struct {
		Metadata meta `json:"metadata"`
		Status   struct {
			Conditions []condition `json:"conditions"`
		} `json:"status"`
	}]
	if json.Unmarshal(f.Data(), &l) != nil {
		return
	}
	r.coFile = f
	for _, co := range l.Items {
		for _, c := range co.Status.Conditions {
			if c.Type == "Degraded" && c.Status == "True" {
				r.degraded = append(r.degraded, coObj{name: co.Metadata.Name, message: c.Message, line: nameLine(f, co.Metadata.Name)})
			}
		}
	}
}

// nameLine is the line of `"name": "<name>"` in f (oc's indented JSON), 0
// when it is not there.
func nameLine(f *File, name string) int {
	text := f.Text()
	for _, sep := range []string{`": "`, `":"`} {
		if i := strings.Index(text, `"name`+sep+name+`"`); i >= 0 {
			return strings.Count(text[:i], "\n") + 1
		}
	}
	return 0
}

// masterNodes are the Nodes with the master (or control-plane) role.
func (r resources) masterNodes() []nodeObj {
	var out []nodeObj
	for _, n := range r.nodes {
		if n.master() {
			out = append(out, n)
		}
	}
	return out
}

// answered is true when the gather's calls to the API came back with
// objects: the API answered through the bootstrap's kubeconfig.
func (r resources) answered() (*File, bool) {
	for _, f := range []*File{r.nodesFile, r.csrFile, r.cmFile, r.coFile} {
		if f != nil && strings.Contains(f.Text(), `"items"`) {
			return f, true
		}
	}
	return nil, false
}
