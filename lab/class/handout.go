package class

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"text/template"

	"github.com/bootlab/bootlab/internal/atomicfile"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/spec"
)

// Handout files, in a learner's handout directory.
const (
	HandoutSpec      = "bootlab.yaml"
	HandoutKey       = "id_ed25519"
	HandoutAddresses = "addresses.txt"
	HandoutKubecfg   = "kubeconfig"
	HandoutReadme    = "README.md"
)

// WriteHandout writes learner's handout into dir: the lab's effective spec,
// its SSH key (0600), its addresses, the kubeconfig when the lab has one,
// and a README with the commands for exactly this lab and the host it
// runs on (host: its name in the class's hosts, "" for none). s is the
// lab's spec as built (its recorded spec), so the handout matches what
// exists.
func WriteHandout(dir, class, learner, host string, s *spec.Spec) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("handout of %s: %w", learner, err)
	}
	doc, err := s.Marshal()
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, HandoutSpec), doc, 0o644); err != nil {
		return err
	}
	hasKey := false
	if key, err := os.ReadFile(labdir.SSHKey(s)); err == nil {
		if err := atomicfile.Write(filepath.Join(dir, HandoutKey), key, 0o600); err != nil {
			return err
		}
		if pub, err := os.ReadFile(labdir.SSHKey(s) + ".pub"); err == nil {
			if err := atomicfile.Write(filepath.Join(dir, HandoutKey+".pub"), pub, 0o644); err != nil {
				return err
			}
		}
		hasKey = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("handout of %s: read the lab key: %w", learner, err)
	}
	hasKubeconfig := false
	if kc, err := os.ReadFile(filepath.Join(labdir.Assets(s), "auth", "kubeconfig")); err == nil {
		if err := atomicfile.Write(filepath.Join(dir, HandoutKubecfg), kc, 0o600); err != nil {
			return err
		}
		hasKubeconfig = true
	}
	if err := atomicfile.Write(filepath.Join(dir, HandoutAddresses), []byte(Addresses(s)), 0o644); err != nil {
		return err
	}
	var b bytes.Buffer
	err = readme.Execute(&b, map[string]any{
		"Class": class, "Learner": learner, "Lab": s.Name, "Spec": s,
		"Host": host, "URI": redactURI(s.Libvirt.URI), "Remote": s.Remote(),
		"Rehearsal": s.Rehearsal(), "Probe": s.Profile == spec.ProfileProbe,
		"Key": hasKey, "Kubeconfig": hasKubeconfig, "Dir": dir,
	})
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, HandoutReadme), b.Bytes(), 0o644)
}

// Addresses are a lab's addresses, one name and address a line.
func Addresses(s *spec.Spec) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "lab          %s\n", s.Name)
	fmt.Fprintf(&b, "network      %s (bridge %s)\n", s.Network.CIDR, s.Network.Bridge)
	fmt.Fprintf(&b, "api          %s  api.%s, api-int.%s\n", s.Network.APIAddress, s.Cluster.Domain(), s.Cluster.Domain())
	fmt.Fprintf(&b, "ingress      %s  *.apps.%s\n", s.Network.IngressAddress, s.Cluster.Domain())
	for _, n := range s.Nodes {
		fmt.Fprintf(&b, "%-12s %s  %s  %s\n", n.Name, n.IP, s.FQDN(n), n.MAC)
	}
	return b.String()
}

var readme = template.Must(template.New("readme").Parse(`# Your lab: {{.Lab}}

Class {{.Class}}, learner {{.Learner}}. Your lab is an ordinary bootlab lab called
` + "`{{.Lab}}`" + `; every command below acts on it and on nothing else.

Name your lab once for this shell:

    export BOOTLAB_LAB={{.Lab}}

or add ` + "`--name {{.Lab}}`" + ` to every command (` + "`bootlab lab status --name {{.Lab}}`" + `).
{{- if .Host}}

## Where it runs

Your lab runs on host {{.Host}} of the class (libvirt ` + "`{{.URI}}`" + `). Run the
commands below on the trainer's machine, where ` + "`bootlab class up`" + ` ran and your
lab's state and key are: bootlab reaches {{.Host}} from there
{{- if .Remote}} over SSH, and your
lab's network through that host (` + "`lab ssh`" + `, ` + "`stage`" + ` and ` + "`lab verify`" + ` go that way;
nothing else routes to it)
{{- end}}.
{{- end}}

## Look at it

    bootlab lab status --name {{.Lab}}
    bootlab lab verify --name {{.Lab}}
    bootlab lab console bootstrap --name {{.Lab}}
{{- if .Rehearsal}}

## Run the bootstrap yourself

The bootstrap of this lab starts nothing at boot: you run bootkube's stages.

    bootlab stage status --name {{.Lab}}
    bootlab stage explain 01
    bootlab stage run 01 --name {{.Lab}}
    bootlab lab ssh bootstrap --name {{.Lab}}
{{- else if not .Probe}}

## Follow the bootstrap

    bootlab lab wait bootstrap-complete --name {{.Lab}}
    bootlab lab ssh bootstrap --name {{.Lab}}
{{- end}}

## Save and go back

    bootlab lab checkpoint save mine --name {{.Lab}}
    bootlab lab checkpoint restore mine --name {{.Lab}}

Your trainer can put the lab back with ` + "`bootlab class reset {{.Learner}} --name {{.Class}}`" + `.

## In this directory

- ` + "`bootlab.yaml`" + `: your lab's spec as built (` + "`bootlab lab status -f bootlab.yaml`" + ` works too).
- ` + "`addresses.txt`" + `: the network, the load balancer and every node's address.
{{- if .Key}}
- ` + "`id_ed25519`" + `: the lab's SSH key (keep it 0600): ` + "`ssh -i id_ed25519 core@NODE-ADDRESS`" + `.
{{- end}}
{{- if .Kubeconfig}}
- ` + "`kubeconfig`" + `: ` + "`export KUBECONFIG=$PWD/kubeconfig`" + `.
{{- end}}
`))
