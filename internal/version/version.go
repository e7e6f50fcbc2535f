// Package version reports the bootlab build version.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version and Commit are set at build time (the Makefile does):
// -ldflags "-X .../internal/version.Version=v1.2.3 -X .../internal/version.Commit=abc123".
var (
	Version = ""
	Commit  = ""
)

// Info is what `bootlab version` prints.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build's version information, falling back to the module
// and VCS data Go embeds in the binary.
func Get() Info {
	in := Info{Version: Version, Commit: Commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && in.Commit == "" {
				in.Commit = s.Value
			}
		}
	}
	if in.Version == "" {
		in.Version = "devel"
	}
	if in.Commit == "" {
		in.Commit = "unknown"
	}
	return in
}

// String returns the version, with the short commit when known.
func String() string {
	in := Get()
	if in.Commit != "unknown" && len(in.Commit) >= 12 {
		return in.Version + "+" + in.Commit[:12]
	}
	return in.Version
}
