package main_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/testkit/proctest"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestCmdlineHidesSecretFlags: a renderer's /debug/pprof/cmdline writes
// xxxxx for the value of its secret flag, -admin-token, in every form the
// flag package takes it (-flag=value, --flag=value, -flag value, --flag
// value), each given once here with the last one in force, and for the
// password of every Redis URL, -redis in each form. The token was hidden
// by its value, the one in force: one given earlier on the line and
// overridden (a wrapper's default, then the operator's) was shown as it
// was.
func TestCmdlineHidesSecretFlags(t *testing.T) {
	rs := redistest.MustStart(t)
	const pass = "pa55-in-force"
	if err := rs.Client(t).ConfigSet(context.Background(), "requirepass", pass).Err(); err != nil {
		t.Fatal(err)
	}
	tokens := []string{"tok-one-overridden", "tok-two-overridden", "tok-three-overridden", "tok-four-in-force"}
	nowhere := "redis://:pw-%s@127.0.0.1:1/0" // overridden, and nothing listens there
	url := "redis://:" + pass + "@" + rs.Addr + "/0"
	dir := t.TempDir()
	var line []string
	args := func(addr string) []string {
		line = []string{
			"-redis=" + strings.Replace(nowhere, "%s", "one", 1),
			"--redis=" + strings.Replace(nowhere, "%s", "two", 1),
			"--redis", strings.Replace(nowhere, "%s", "three", 1),
			"-admin-token=" + tokens[0],
			"--admin-token=" + tokens[1],
			"--admin-token", tokens[2],
			"-admin-token", tokens[3],
			"-redis", url,
			"-db", filepath.Join(dir, "feed.db"), "-http", addr, "-consumer", "r1", "-shutdown-delay", "0",
		}
		return line
	}
	p, addr := proctest.StartHTTP(t, "renderer", "renderer", "/healthz", http.StatusOK, 30*time.Second, args)
	defer p.Term(20 * time.Second)
	var body string
	proctest.WaitFor(t, 30*time.Second, func() bool {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/debug/pprof/cmdline", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tokens[3])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK
	}, "the renderer serving /debug/pprof/cmdline to its token")
	want := strings.Join(append([]string{p.Path},
		"-redis=redis://:xxxxx@127.0.0.1:1/0",
		"--redis=redis://:xxxxx@127.0.0.1:1/0",
		"--redis", "redis://:xxxxx@127.0.0.1:1/0",
		"-admin-token=xxxxx",
		"--admin-token=xxxxx",
		"--admin-token", "xxxxx",
		"-admin-token", "xxxxx",
		"-redis", "redis://:xxxxx@"+rs.Addr+"/0",
	), "\x00") + "\x00" + strings.Join(line[len(line)-8:], "\x00")
	if body != want {
		t.Errorf("cmdline\n%q\nwant\n%q", body, want)
	}
	for _, secret := range append(tokens, pass, "pw-one", "pw-two", "pw-three") {
		if strings.Contains(body, secret) {
			t.Errorf("cmdline shows %q", secret)
		}
	}
}
