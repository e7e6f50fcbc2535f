// Package gobuild builds pinned Go programs from the Go module proxy, once:
// a Component names its modules and versions, its replaces and its main
// package; bootlab writes the module's go.mod and the go.sum it carries
// (so the build verifies every module offline of the checksum database),
// runs `CGO_ENABLED=0 go build -trimpath` with the Go toolchain on PATH,
// and caches the static binary under the cache root by a hash of those
// inputs. A cached binary is returned without running go, which is what
// lets `bootlab cache export|import` carry it to a classroom with no
// internet and no Go. The components are the release's etcd (etcd.go) and
// its Kubernetes control plane and kubectl as one multi-call binary
// (kubernetes.go).
package gobuild
