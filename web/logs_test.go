package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/lesismal/nbio/logging"

	"github.com/codemojex/feed/internal/testkit/wait"
	"github.com/codemojex/feed/web"
)

// syncBuffer is a bytes.Buffer safe for a logger and a test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogsBoundUntrusted: request values that reach the log (a hostile
// Origin in the websocket refusal, a foreign Host and a long path) are
// escaped and cut short (issue 12, item 7).
func TestLogsBoundUntrusted(t *testing.T) {
	var logs syncBuffer
	e := MustOpenEnv(t, func(c *web.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	// Raw requests: net/http's client will not send control characters.
	raw := func(req string) {
		conn, err := net.Dial("tcp", e.srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, req)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("read response: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Fatalf("hostile request answered %d", resp.StatusCode)
		}
	}
	// net/http answers 400 itself to control characters in a header, so
	// they come in the (percent-decoded) path; headers are only long.
	hostile := "http://" + strings.Repeat("A", 8000) + ".example"
	raw("GET /games/g1/live?after=0 HTTP/1.1\r\nHost: " + e.srv.Addr() + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: " + hostile + "\r\n\r\n")
	// One request for both the long Host and the hostile path: a foreign
	// host's refusal logs once every 10 s (TestRefusalsLogSampled).
	raw("GET /games/%1b]0;pwned%07%1b[2J" + strings.Repeat("p", 3000) + "/live?after=0 HTTP/1.1\r\nHost: evil" +
		strings.Repeat("h", 8000) + ".example\r\n\r\n")
	wait.Until(t, 5*time.Second, func() bool {
		l := logs.String()
		return strings.Contains(l, "websocket refused") && strings.Count(l, "foreign host refused") == 1
	}, func() string { return "both refusals logged in:\n" + logs.String() })
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.ContainsRune(line, 0x1b) || strings.ContainsRune(line, '\a') {
			t.Errorf("raw control character in log line %q", line)
		}
		if len(line) > 2048 {
			t.Errorf("log line of %d bytes: %.200q…", len(line), line)
		}
	}
}

// TestLogsServingEngine: the line that says the web server serves names
// its websocket engine, so that an operator comparing replicas across a
// switch of -ws-engine can tell them apart.
func TestLogsServingEngine(t *testing.T) {
	var logs syncBuffer
	MustOpenEnv(t, func(c *web.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	want := os.Getenv("CODEMOJEX_WS_ENGINE") // MustOpenEnv's engine
	if want == "" {
		want = web.WSEngineNbio // the default
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `msg="web: serving"`) {
			if !strings.Contains(line, "ws_engine="+want) {
				t.Errorf("serving line %q does not name engine %s", line, want)
			}
			return
		}
	}
	t.Fatalf("no serving line in %q", logs.String())
}

// TestRefusalsLogSampled: a refusal any client can repeat at will (a
// foreign Origin's handshake, taken before the upgrade rate; a foreign
// Host) logs at most one line every 10 s with the count held back, where
// every request wrote an INFO line: one client's loop filled the log.
func TestRefusalsLogSampled(t *testing.T) {
	var logs syncBuffer
	e := MustOpenEnv(t, func(c *web.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const n = 30
	for range n {
		h := http.Header{"Origin": {"http://evil.example"}}
		c, _, err := websocket.Dial(ctx, e.wsURL("g1", 0), &websocket.DialOptions{HTTPHeader: h})
		if err == nil {
			c.CloseNow()
			t.Fatal("a foreign Origin's handshake accepted")
		}
		if resp, _ := e.get("/status", "Host", "evil.example"); resp.StatusCode != http.StatusMisdirectedRequest {
			t.Fatalf("foreign Host: %d, want 421", resp.StatusCode)
		}
	}
	// Within 10 s of the first, each refusal logs once; a run slower than
	// that may log twice.
	for _, msg := range []string{"web: websocket refused", "web: foreign host refused"} {
		if got := strings.Count(logs.String(), msg); got < 1 || got > 2 {
			t.Errorf("%d lines %q for %d refusals, want 1", got, msg, n)
		}
	}
}

// TestNbioLinesKeepTheirKeys: a line of the nbio engine (a panic it
// recovered, with its stack after the first line; an overload) is one
// slog line with one msg, "web: nbio", its words under err as the redis
// client's are, and the stack whole under stack. The words went under a
// second msg key (`msg="web: nbio" msg="…"`), which a log pipeline reads
// as one key twice: one of the two lost. And the stack was cut with them
// at 256 bytes, where the websocket's own panic lines keep theirs.
func TestNbioLinesKeepTheirKeys(t *testing.T) {
	stack := "goroutine 7 [running]:\n" + strings.Repeat("github.com/lesismal/nbio/nbhttp.(*Engine).DataHandler(...)\n\t/x/engine.go:581 +0x1f\n", 10)
	for _, tt := range []struct {
		name      string
		log       func(l logging.Logger)
		err       string
		wantStack bool
	}{
		{"panic", func(l logging.Logger) { l.Error("execute ParserCloser failed: %v\n%v\n", "boom \x1b[2J", stack) }, `execute ParserCloser failed: boom \x1b[2J`, true},
		{"overload", func(l logging.Logger) { l.Warn("AddTransferredConn failed: overload, already has %v online", 7) }, "AddTransferredConn failed: overload, already has 7 online", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out syncBuffer
			tt.log(web.NbioLogger(slog.New(slog.NewJSONHandler(&out, nil))))
			var line map[string]any
			dec := json.NewDecoder(strings.NewReader(out.String()))
			if err := dec.Decode(&line); err != nil {
				t.Fatalf("log %q: %v", out.String(), err)
			}
			if n := strings.Count(out.String(), `"msg":`); n != 1 || line["msg"] != "web: nbio" {
				t.Errorf("line %s: %d msg keys, msg %q; want one, \"web: nbio\"", out.String(), n, line["msg"])
			}
			if line["err"] != tt.err {
				t.Errorf("err %q, want %q", line["err"], tt.err)
			}
			if got, _ := line["stack"].(string); tt.wantStack && got != strings.TrimSuffix(stack, "\n") || !tt.wantStack && line["stack"] != nil {
				t.Errorf("stack %q, want %q", got, stack)
			}
		})
	}
}

// TestStoreFailureLogSampled: a store that fails every page and data
// request (closed here, as a failing disk fails them) logs at most one
// ERROR line per kind of request every 10 s, with the count held back,
// where every request wrote one: a flood of page requests flooded the log.
// Each request is still answered 500.
func TestStoreFailureLogSampled(t *testing.T) {
	var logs syncBuffer
	e := MustOpenEnv(t, func(c *web.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	evs := e.gen("g1").chats(t, 2)
	e.upsert(evs...)
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	const n = 30
	paths := map[string]string{"/games/g1": "web: page", "/games/g1/timeline.json": "web: timeline", "/games/g1/replay": "web: game"}
	for range n {
		for path := range paths {
			if resp, _ := e.get(path); resp.StatusCode != http.StatusInternalServerError {
				t.Fatalf("GET %s with the store closed: %d, want 500", path, resp.StatusCode)
			}
		}
	}
	// Within 10 s of the first, each kind logs once; a run slower than
	// that may log twice.
	for _, msg := range paths {
		if got := strings.Count(logs.String(), `level=ERROR msg="`+msg+`"`); got < 1 || got > 2 {
			t.Errorf("%d lines %q for %d failures, want 1", got, msg, n)
		}
	}
	if !strings.Contains(logs.String(), "similar_unlogged=") {
		t.Errorf("no similar_unlogged in the log:\n%s", logs.String())
	}
}
