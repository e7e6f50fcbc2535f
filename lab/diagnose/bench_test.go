package diagnose

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// A bundle the size of a real one: four nodes' kubelet journals of a
// 30-minute bootstrap at 50 lines a second, 57 MiB unpacked. Read and
// diagnosed in about half a second here, 150 MB allocated.
func BenchmarkDiagnoseBigBundle(b *testing.B) {
	f := healthy(b)
	for _, dir := range []string{"bootstrap", "control-plane/" + masterIPs[0], "control-plane/" + masterIPs[1], "control-plane/" + masterIPs[2]} {
		kl := &journal{host: "n", ident: "kubenswrapper", pid: 2100}
		kl.every(at(0, 0), at(29, 59), 20*time.Millisecond, `I0514 kubelet.go:2400] "SyncLoop (PLEG): event for pod" pod="openshift-etcd/etcd-x" event={"ID":"abc","Type":"ContainerStarted"}`)
		f.set(dir+"/journals/kubelet.log", kl.bytes())
	}
	data := f.tarGz(b)
	b.Logf("bundle %d KiB", len(data)>>10)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bd, err := ReadBundleFrom(context.Background(), bytes.NewReader(data), "big", DefaultLimits())
		if err != nil {
			b.Fatal(err)
		}
		Diagnose(bd, Options{})
	}
}

// The walk alone, over a bundle held in memory as lab diagnose of a
// running lab holds it (NewBundle and Add, no archive): the same big
// bundle's files, added afresh each time so every log is read again.
func BenchmarkDiagnoseInMemory(b *testing.B) {
	f := healthy(b)
	for _, dir := range []string{"bootstrap", "control-plane/" + masterIPs[0], "control-plane/" + masterIPs[1], "control-plane/" + masterIPs[2]} {
		kl := &journal{host: "n", ident: "kubenswrapper", pid: 2100}
		kl.every(at(0, 0), at(29, 59), 20*time.Millisecond, `I0514 kubelet.go:2400] "SyncLoop (PLEG): event for pod" pod="openshift-etcd/etcd-x" event={"ID":"abc","Type":"ContainerStarted"}`)
		f.set(dir+"/journals/kubelet.log", kl.bytes())
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bd := NewBundle("demo")
		bd.Live = true
		for rel, data := range f.files {
			if Reads(rel) {
				if err := bd.Add(rel, "", data); err != nil {
					b.Fatal(err)
				}
			}
		}
		for d := range f.dirs {
			bd.AddDir(d)
		}
		if r := Diagnose(bd, Options{Now: gathered}); !r.OK {
			b.Fatal(r.Summary())
		}
	}
}
