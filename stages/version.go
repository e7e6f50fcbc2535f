package stages

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is an OpenShift major.minor release.
type Version struct{ Major, Minor int }

// Oldest and Newest bound the releases whose bootkube.sh the catalog models.
var (
	Oldest = Version{4, 16}
	Newest = Version{4, 22}
)

// ParseVersion reads "4.19", "4.19.10" or "4.19.0-ec.3".
func ParseVersion(s string) (Version, error) {
	parts := strings.SplitN(strings.TrimPrefix(strings.TrimSpace(s), "v"), ".", 3)
	if len(parts) < 2 {
		return Version{}, fmt.Errorf("OpenShift version %q: want major.minor, e.g. 4.19", s)
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.SplitN(parts[1], "-", 2)[0])
	if err1 != nil || err2 != nil {
		return Version{}, fmt.Errorf("OpenShift version %q: want major.minor, e.g. 4.19", s)
	}
	return Version{major, minor}, nil
}

// MustVersion parses a version known to be valid.
func MustVersion(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Less reports whether v is older than o.
func (v Version) Less(o Version) bool {
	if v.Major != o.Major {
		return v.Major < o.Major
	}
	return v.Minor < o.Minor
}

// IsZero reports an unset version.
func (v Version) IsZero() bool { return v == Version{} }

// CheckSupported refuses releases outside Oldest..Newest.
func (v Version) CheckSupported() error {
	if v.Less(Oldest) || Newest.Less(v) {
		return fmt.Errorf("OpenShift %s is not modelled: bootlab replays the bootkube.sh of %s through %s (set openshift.version or --openshift-version)", v, Oldest, Newest)
	}
	return nil
}

// EtcdMinor is the etcd minor the release's payload ships: 3.5 through
// 4.20, 3.6 from 4.21 (openshift/etcd's release branches; lab/release
// pins the patch and checks that it agrees).
func (v Version) EtcdMinor() string {
	if v.Less(Version{4, 21}) {
		return "3.5"
	}
	return "3.6"
}
