package openshift

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/bootlab/bootlab/lab/images"
)

// DefaultClientsMirror hosts <version>/openshift-install-linux.tar.gz,
// openshift-client-linux.tar.gz and sha256sum.txt.
const DefaultClientsMirror = "https://mirror.openshift.com/pub/openshift-v4/clients/ocp/"

// Tools are the binaries a lab runs, and where each came from
// ("path", "PATH", "cache", "download").
type Tools struct {
	Installer, OC         string
	InstallerFrom, OCFrom string
}

// ToolsOptions say which version is wanted and where binaries may come from.
type ToolsOptions struct {
	Version string
	// InstallerPath and OCPath are openshift.installerPath/ocPath: used as
	// given, and their version must match.
	InstallerPath, OCPath string
	// Mirror is openshift.mirrors.clients (default DefaultClientsMirror).
	Mirror     string
	CacheDir   string
	Downloader *images.Downloader
	Log        *slog.Logger
	// LookPath finds binaries on PATH (exec.LookPath when nil).
	LookPath func(string) (string, error)
}

type tool struct {
	name, tarball, field string
	versionArgs          []string
}

var (
	installerTool = tool{name: "openshift-install", tarball: "openshift-install-linux.tar.gz", field: "openshift.installerPath", versionArgs: []string{"version"}}
	ocTool        = tool{name: "oc", tarball: "openshift-client-linux.tar.gz", field: "openshift.ocPath", versionArgs: []string{"version", "--client"}}
)

// EnsureTools returns openshift-install and oc of o.Version.
func EnsureTools(ctx context.Context, o ToolsOptions) (*Tools, error) {
	if o.Version == "" {
		return nil, errors.New("openshift.version is empty: set the OpenShift release, e.g. " + "4.19.10")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	if o.Downloader == nil {
		o.Downloader = &images.Downloader{Log: o.Log}
	}
	var sums map[string]string
	t := &Tools{}
	var err error
	if t.Installer, t.InstallerFrom, err = ensureTool(ctx, o, installerTool, o.InstallerPath, &sums); err != nil {
		return nil, err
	}
	if t.OC, t.OCFrom, err = ensureTool(ctx, o, ocTool, o.OCPath, &sums); err != nil {
		return nil, err
	}
	return t, nil
}

func ensureTool(ctx context.Context, o ToolsOptions, tl tool, given string, sums *map[string]string) (string, string, error) {
	if given != "" {
		v, err := BinaryVersion(ctx, given, tl.versionArgs...)
		if err != nil {
			return "", "", fmt.Errorf("%s %s: %w", tl.field, given, err)
		}
		if !versionMatches(v, o.Version) {
			return "", "", fmt.Errorf("%s %s is version %q, the lab wants %s (openshift.version): point %s at a %s %s binary or unset it to download one", tl.field, given, firstLine([]byte(v)), o.Version, tl.field, tl.name, o.Version)
		}
		return given, "path", nil
	}
	if p, err := o.LookPath(tl.name); err == nil {
		if v, err := BinaryVersion(ctx, p, tl.versionArgs...); err == nil && versionMatches(v, o.Version) {
			o.Log.Debug("using binary on PATH", "tool", tl.name, "path", p)
			return p, "PATH", nil
		} else if err == nil {
			o.Log.Info("binary on PATH has another version; using the cache", "tool", tl.name, "path", p, "version", firstLine([]byte(v)), "want", o.Version)
		}
	}
	dir := filepath.Join(o.CacheDir, "clients", o.Version)
	bin := filepath.Join(dir, tl.name)
	if _, err := os.Stat(bin); err == nil {
		if v, err := BinaryVersion(ctx, bin, tl.versionArgs...); err == nil && versionMatches(v, o.Version) {
			return bin, "cache", nil
		}
		o.Log.Info("cached binary does not report the wanted version; downloading again", "tool", tl.name, "path", bin)
	}
	base := clientsURL(o.Mirror, o.Version)
	if *sums == nil {
		s, err := fetchSums(ctx, o.Downloader, base+"sha256sum.txt")
		if err != nil {
			return "", "", err
		}
		*sums = s
	}
	want, ok := (*sums)[tl.tarball]
	if !ok {
		return "", "", fmt.Errorf("%ssha256sum.txt lists no %s: check openshift.version and openshift.mirrors.clients", base, tl.tarball)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("create cache %s: %w", dir, err)
	}
	tarball := filepath.Join(dir, tl.tarball)
	o.Log.Info("downloading", "file", tl.tarball, "version", o.Version, "from", base)
	if err := o.Downloader.Fetch(ctx, base+tl.tarball, tarball, want); err != nil {
		return "", "", err
	}
	if err := extractBinary(tarball, tl.name, bin); err != nil {
		return "", "", err
	}
	os.Remove(tarball)
	v, err := BinaryVersion(ctx, bin, tl.versionArgs...)
	if err != nil {
		return "", "", fmt.Errorf("downloaded %s does not run: %w", bin, err)
	}
	if !versionMatches(v, o.Version) {
		return "", "", fmt.Errorf("downloaded %s reports version %q, not %s: check openshift.mirrors.clients", bin, firstLine([]byte(v)), o.Version)
	}
	return bin, "download", nil
}

func clientsURL(mirror, version string) string {
	if mirror == "" {
		mirror = DefaultClientsMirror
	}
	return strings.TrimSuffix(mirror, "/") + "/" + version + "/"
}

// fetchSums reads a sha256sum.txt ("<sum>  <file>" lines).
func fetchSums(ctx context.Context, d *images.Downloader, url string) (map[string]string, error) {
	client := d.HTTPClient()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("download %s: %w (check the network, HTTPS_PROXY or openshift.mirrors.clients)", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download %s: HTTP %s: check openshift.version and openshift.mirrors.clients", url, resp.Status)
	}
	sums := map[string]string{}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 1<<20))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && len(f[0]) == 64 {
			sums[strings.TrimPrefix(f[1], "*")] = strings.ToLower(f[0])
		}
	}
	return sums, sc.Err()
}

// extractBinary writes the tar member called name (at any depth) to dest, 0755.
func extractBinary(tarball, name, dest string) error {
	f, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", tarball, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return fmt.Errorf("%s holds no %s", tarball, name)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", tarball, err)
		}
		if h.Typeflag != tar.TypeReg || filepath.Base(h.Name) != name {
			continue
		}
		tmp := dest + ".partial"
		out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, tr); err != nil {
			out.Close()
			os.Remove(tmp)
			return fmt.Errorf("extract %s from %s: %w", name, tarball, err)
		}
		if err := out.Close(); err != nil {
			os.Remove(tmp)
			return err
		}
		return os.Rename(tmp, dest)
	}
}

// BinaryVersion runs bin with args (e.g. "version") and returns its output.
func BinaryVersion(ctx context.Context, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	// A binary just written may be busy for a moment: a process forked
	// elsewhere in this program while the file was open for writing holds
	// that descriptor until it execs (Go issue 22315; seen with tests side
	// by side). Go's own tools retry; so does this, for up to 2 s.
	for i := 0; i < 40 && errors.Is(err, syscall.ETXTBSY) && ctx.Err() == nil; i++ {
		time.Sleep(50 * time.Millisecond)
		out, err = exec.CommandContext(ctx, bin, args...).CombinedOutput()
	}
	if err != nil {
		return "", fmt.Errorf("`%s %s` failed: %w: %s", bin, strings.Join(args, " "), err, firstLine(out))
	}
	return strings.TrimSpace(string(out)), nil
}

// versionMatches finds want as a word of the version output:
// "openshift-install 4.19.10" or "Client Version: 4.19.10".
func versionMatches(out, want string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if strings.HasPrefix(line, "openshift-install ") || strings.HasPrefix(line, "Client Version:") {
			v := strings.TrimPrefix(f[len(f)-1], "v")
			return v == want
		}
	}
	return false
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// FindInstaller returns the openshift-install of version without
// downloading: openshift.installerPath, else on PATH, else in the cache,
// when its version matches.
func FindInstaller(ctx context.Context, version, given, cacheDir string, lookPath func(string) (string, error)) (string, error) {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	var candidates []string
	if given != "" {
		candidates = append(candidates, given)
	} else {
		if p, err := lookPath(installerTool.name); err == nil {
			candidates = append(candidates, p)
		}
		candidates = append(candidates, filepath.Join(cacheDir, "clients", version, installerTool.name))
	}
	for _, c := range candidates {
		if v, err := BinaryVersion(ctx, c, installerTool.versionArgs...); err == nil && versionMatches(v, version) {
			return c, nil
		}
	}
	return "", fmt.Errorf("no openshift-install %s (openshift.installerPath, PATH or %s): run `bootlab lab up` to download it", version, filepath.Join(cacheDir, "clients", version))
}

// GatherBootstrap runs `openshift-install gather bootstrap` for the lab's
// bootstrap and masters with the lab key and returns the bundle's path.
func GatherBootstrap(ctx context.Context, inst *Installer, assetsDir, bootstrapIP string, masterIPs []string, keyPath string) (string, error) {
	args := []string{"gather", "bootstrap", "--dir", assetsDir, "--bootstrap", bootstrapIP}
	for _, m := range masterIPs {
		args = append(args, "--master", m)
	}
	args = append(args, "--key", keyPath)
	start := time.Now()
	if err := inst.Run(ctx, args...); err != nil {
		return "", err
	}
	matches, _ := filepath.Glob(filepath.Join(assetsDir, "log-bundle-*.tar.gz"))
	var newest string
	var newestT time.Time
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.ModTime().After(newestT) {
			newest, newestT = m, fi.ModTime()
		}
	}
	if newest == "" || newestT.Before(start.Add(-time.Second)) {
		return "", fmt.Errorf("openshift-install gather bootstrap finished but left no new log-bundle-*.tar.gz in %s", assetsDir)
	}
	return newest, nil
}
