package classcmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootlab/bootlab/lab/hypervisor"
)

// BenchmarkClassUpOverHosts is docs/class.md's "what bootlab does at 100":
// class up, status and down of 12, 30 and 100 probe labs over 1 and 3
// hosts, each host a fake daemon that takes uploads (nothing runs), as
// the trainer's machine drives them. It reports, per host, the
// connections class up opens (in all, and at most at once) and class
// status opens, the boot files uploaded (in all, and of them the probe
// image's kernel and initrd) and the volumes copied on the host instead,
// and the trainer's machine's time per lab: bootlab's own cost,
// without the hosts' (a real host adds its libvirt calls and the
// uploads' transfer).
func BenchmarkClassUpOverHosts(b *testing.B) {
	for _, tc := range []struct{ labs, hosts int }{{12, 1}, {30, 3}, {100, 1}, {100, 3}} {
		b.Run(fmt.Sprintf("%dlabs-%dhosts", tc.labs, tc.hosts), func(b *testing.B) {
			boot := b.TempDir()
			// The probe image's kernel and initrd, at their sizes.
			for f, size := range map[string]int{"vmlinuz": 14 << 20, "initrd": 6 << 20} {
				if err := os.WriteFile(filepath.Join(boot, f), make([]byte, size), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			var uris, hostLines []string
			for i := range tc.hosts {
				uris = append(uris, fmt.Sprintf("test:///bench%d", i))
				hostLines = append(hostLines, fmt.Sprintf("  - {name: h%d, uri: %q}", i, uris[i]))
			}
			doc := fmt.Sprintf("name: b\ntemplate:\n  profile: probe\n  accelerator: tcg\n  image: {kernel: %s, initrd: %s}\n  topology: {masters: 1, workers: 0}\nlearners: %d\nhosts:\n%s\n",
				filepath.Join(boot, "vmlinuz"), filepath.Join(boot, "initrd"), tc.labs, strings.Join(hostLines, "\n"))
			file := filepath.Join(b.TempDir(), "class.yaml")
			if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
				b.Fatal(err)
			}
			var upDials, upPeak, statusDials, uploads, images, copies float64
			var upTime time.Duration
			for b.Loop() {
				b.StopTimer()
				b.Setenv("BOOTLAB_HOME", b.TempDir())
				hosts := newFakeHosts(uris...)
				for _, hv := range hosts.hvs {
					hv.Caps = hypervisor.Capabilities{UploadsVolumes: true}
				}
				b.StartTimer()
				start := time.Now()
				if _, errOut, err := runHosts(b, hosts, "up", "-f", file, "--no-preflight", "--parallel", "4"); err != nil {
					b.Fatalf("class up: %v\n%s", err, errOut)
				}
				upTime += time.Since(start)
				b.StopTimer()
				upDials += float64(maxCount(hosts.dials))
				upPeak += float64(maxCount(hosts.peak))
				var mostUp, mostImg, mostCopies int
				for _, hv := range hosts.hvs {
					up, img, cp := 0, 0, 0
					for _, m := range hv.Mutations() {
						if strings.HasPrefix(m, "CopyVolume ") {
							cp++
						}
						if strings.HasPrefix(m, "UploadVolume ") {
							up++
							if strings.Contains(m, "/boot-kernel-") || strings.Contains(m, "/boot-initrd-") {
								img++
							}
						}
					}
					mostUp, mostImg, mostCopies = max(mostUp, up), max(mostImg, img), max(mostCopies, cp)
				}
				copies += float64(mostCopies)
				uploads += float64(mostUp)
				images += float64(mostImg)
				before := copyCounts(hosts.dials)
				if _, _, err := runHosts(b, hosts, "status", "--name", "b"); err != nil {
					b.Fatal(err)
				}
				statusDials += float64(maxDelta(before, hosts.dials))
				if _, _, err := runHosts(b, hosts, "down", "--name", "b", "--yes"); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			n := float64(b.N)
			b.ReportMetric(float64(upTime.Milliseconds())/n/float64(tc.labs), "ms/lab-up")
			b.ReportMetric(upDials/n, "up-connections/host")
			b.ReportMetric(upPeak/n, "up-connections-at-once/host")
			b.ReportMetric(statusDials/n, "status-connections/host")
			b.ReportMetric(uploads/n, "uploads/host")
			b.ReportMetric(images/n, "image-uploads/host")
			b.ReportMetric(copies/n, "copies-on-host/host")
		})
	}
}

func maxCount(m map[string]int) int {
	out := 0
	for _, v := range m {
		out = max(out, v)
	}
	return out
}

func copyCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func maxDelta(before, after map[string]int) int {
	out := 0
	for k, v := range after {
		out = max(out, v-before[k])
	}
	return out
}
