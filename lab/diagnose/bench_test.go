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
