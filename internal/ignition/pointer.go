package ignition

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/coreos/ignition/v2/config/v3_2/types"
	"github.com/vincent-petithory/dataurl"
)

// SpecVersion is the Ignition spec version bootlab writes: the one
// openshift-install writes for RHCOS.
const SpecVersion = "3.2.0"

// AcceptHeader is what Ignition sends when it fetches a config; the MCS
// picks the served spec version from it (reference §7.4).
const AcceptHeader = "application/vnd.coreos.ignition+json;version=" + SpecVersion + ", */*;q=0.1"

// MCSPort is the Machine Config Server's TLS port.
const MCSPort = 22623

// MCSURL is the merge source of a pointer config for role (pool), exactly as
// the installer writes it: https://api-int.<cluster domain>:22623/config/<role>.
func MCSURL(clusterDomain, role string) string {
	return fmt.Sprintf("https://api-int.%s:%d/config/%s", clusterDomain, MCSPort, role)
}

// Pointer returns the installer's master.ign/worker.ign shape: a config whose
// only content is a merge source and the CA (PEM) that must sign its server.
func Pointer(source string, caPEM []byte) types.Config {
	ca := DataURL(caPEM)
	src := source
	return types.Config{
		Ignition: types.Ignition{
			Version: SpecVersion,
			Config: types.IgnitionConfig{
				Merge: []types.Resource{{Source: &src}},
			},
			Security: types.Security{
				TLS: types.TLS{
					CertificateAuthorities: []types.Resource{{Source: &ca}},
				},
			},
		},
	}
}

// DataURL encodes data as Ignition (and the installer) do: a base64 data URL.
func DataURL(data []byte) string { return dataurl.EncodeBytes(data) }

// DecodeDataURL returns the bytes of a data URL.
func DecodeDataURL(u string) ([]byte, error) {
	d, err := dataurl.DecodeString(u)
	if err != nil {
		return nil, err
	}
	return d.Data, nil
}

// File is one file a full config lays down.
type File struct {
	Path string
	Mode int
	Data []byte
}

// WithFiles returns an empty spec-3.2 config carrying files, sorted by path
// so the output is stable.
func WithFiles(files []File) types.Config {
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	cfg := types.Config{Ignition: types.Ignition{Version: SpecVersion}}
	for _, f := range sorted {
		src := DataURL(f.Data)
		mode := f.Mode
		overwrite := true
		cfg.Storage.Files = append(cfg.Storage.Files, types.File{
			Node: types.Node{Path: f.Path, Overwrite: &overwrite},
			FileEmbedded1: types.FileEmbedded1{
				Contents: types.Resource{Source: &src},
				Mode:     &mode,
			},
		})
	}
	return cfg
}

// FileContents returns the contents of the file at path in cfg, decoding its
// data URL; ok is false when cfg has no such file.
func FileContents(cfg types.Config, path string) (data []byte, ok bool, err error) {
	for _, f := range cfg.Storage.Files {
		if f.Path != path {
			continue
		}
		if f.Contents.Source == nil {
			return nil, true, nil
		}
		data, err := DecodeDataURL(*f.Contents.Source)
		if err != nil {
			return nil, true, fmt.Errorf("file %s in Ignition: contents: %w", path, err)
		}
		return data, true, nil
	}
	return nil, false, nil
}

// Marshal renders cfg as JSON and validates the result.
func Marshal(cfg types.Config) ([]byte, error) {
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("marshal Ignition config: %w", err)
	}
	if err := Validate(data); err != nil {
		return nil, err
	}
	return data, nil
}
