//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// browser is a headless Chromium driven over the DevTools protocol: just
// enough of it (open a page, evaluate JavaScript, take a screenshot) for
// the dashboard test, over golang.org/x/net/websocket.
type browser struct {
	cmd     *exec.Cmd
	devtool string // http://127.0.0.1:PORT
}

// startBrowser runs chromium headless with remote debugging on a free
// loopback port and stops it when the test ends.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found: on Debian apt-get install -y chromium (scripts/host/setup.sh --test installs it); Ubuntu's chromium package is a stub for the snap: snap install chromium, with /snap/bin on PATH")
	}
	profile := t.TempDir()
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+profile,
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--remote-allow-origins=*",
		"--window-size=1280,1100", "about:blank")
	// Its own process group: chromium's renderer and utility processes
	// outlive a killed browser process and keep writing into the profile,
	// which t.TempDir's cleanup then fails to remove.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = cmd.Wait()
		// Every process of the group is gone before the profile is removed.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
				return
			}
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		t.Errorf("chromium's processes (group %d) outlived SIGKILL for 10s", pgid)
	})
	found := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`DevTools listening on ws://([^/]+)/`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case hostport := <-found:
		return &browser{cmd: cmd, devtool: "http://" + hostport}
	case <-time.After(60 * time.Second):
		t.Fatal("chromium did not print its DevTools address within 60 s")
	}
	return nil
}

// page is one tab and its DevTools websocket.
type page struct {
	ws   *websocket.Conn
	mu   sync.Mutex
	next int
}

// open opens url in a new tab.
func (b *browser) open(t *testing.T, target string) *page {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, b.devtool+"/json/new?"+url.QueryEscape(target), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("devtools /json/new: %v", err)
	}
	defer resp.Body.Close()
	var tab struct {
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &tab); err != nil || tab.WebSocketDebuggerURL == "" {
		t.Fatalf("devtools /json/new answered %s: %s", resp.Status, body)
	}
	ws, err := websocket.Dial(tab.WebSocketDebuggerURL, "", "http://127.0.0.1/")
	if err != nil {
		t.Fatalf("devtools websocket: %v", err)
	}
	ws.MaxPayloadBytes = 64 << 20
	t.Cleanup(func() { ws.Close() })
	return &page{ws: ws}
}

// call sends one DevTools command and returns its result, skipping events.
func (p *page) call(method string, params any) (json.RawMessage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	id := p.next
	if err := websocket.JSON.Send(p.ws, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	_ = p.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := websocket.JSON.Receive(p.ws, &msg); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if msg.ID != id {
			continue
		}
		if msg.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, msg.Error.Message)
		}
		return msg.Result, nil
	}
}

// eval evaluates a JavaScript expression returning a string.
func (p *page) eval(t *testing.T, expr string) string {
	t.Helper()
	res, err := p.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
	if err != nil {
		t.Fatalf("evaluate %q: %v", expr, err)
	}
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	if r.ExceptionDetails != nil {
		t.Fatalf("evaluate %q: %s", expr, r.ExceptionDetails.Text)
	}
	s, _ := r.Result.Value.(string)
	return s
}

// waitFor evaluates expr until it returns "true" or the timeout ends, and
// returns the last value of show for the failure message.
func (p *page) waitFor(t *testing.T, what, expr, show string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		if p.eval(t, "String("+expr+")") == "true" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the page never showed %s within %s; page state: %s", what, timeout, p.eval(t, show))
		case <-tick.C:
		}
	}
}

// screenshot saves a PNG of the page.
func (p *page) screenshot(t *testing.T, path string) {
	t.Helper()
	p.capture(t, path, map[string]any{"format": "png", "captureBeyondViewport": true})
}

// docsScreenshot saves a PNG of the whole page, scaled down,
// under $BOOTLAB_SCREENSHOTS as name (`make screenshots` sets it to
// docs/pictures, a relative path being taken from the repository root):
// the pictures README.md and docs/dashboard.md show. Without the variable
// it does nothing. The docs' copy is scaled because a
// repository keeps every version of a picture: each stays under 200 KB.
// It shows lab alone: the tiles and changes of other labs on a shared
// host (other tests', other users') are taken off the page first; the
// page's next update may draw them again, which the test does not mind.
func (p *page) docsScreenshot(t *testing.T, name, lab string) {
	t.Helper()
	dir := os.Getenv("BOOTLAB_SCREENSHOTS")
	if dir == "" {
		return
	}
	p.eval(t, fmt.Sprintf(`document.querySelectorAll('.tile[data-lab]').forEach((e) => { if (e.dataset.lab !== %[1]q) e.remove() });
document.querySelectorAll('#changes li').forEach((e) => { if (!e.textContent.includes(%[1]q + ':')) e.remove() }); ''`, lab))
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", "..", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("BOOTLAB_SCREENSHOTS: %v", err)
	}
	width, _ := strconv.Atoi(p.eval(t, `String(document.documentElement.scrollWidth)`))
	height, _ := strconv.Atoi(p.eval(t, `String(document.documentElement.scrollHeight)`))
	if width == 0 || height == 0 {
		t.Fatalf("the page has no size (%dx%d) to screenshot", width, height)
	}
	clip := map[string]any{"x": 0, "y": 0, "width": width, "height": height, "scale": 0.7}
	path := filepath.Join(dir, name)
	size := p.capture(t, path, map[string]any{"format": "png", "clip": clip, "captureBeyondViewport": true})
	if size > maxDocsScreenshot {
		t.Errorf("%s is %d bytes: a docs picture stays under %d (clip or scale it more)", path, size, maxDocsScreenshot)
	}
}

// maxDocsScreenshot is the most a screenshot committed under docs/ weighs.
const maxDocsScreenshot = 200 << 10

// capture takes a screenshot with params and writes it to path; it
// returns its size.
func (p *page) capture(t *testing.T, path string, params map[string]any) int {
	t.Helper()
	res, err := p.call("Page.captureScreenshot", params)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	var r struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Fatalf("screenshot is not a PNG (%v)", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
	return len(png)
}
