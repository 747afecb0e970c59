package renderer_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/pipeline"
	"github.com/codemojex/feed/internal/renderer"
	"github.com/codemojex/feed/internal/testkit/redistest"
	"github.com/codemojex/feed/web"
)

// TestAdminNeedsTokenBeyondLoopback: a renderer that would listen beyond
// loopback refuses to start without -admin-token; with one, the admin
// endpoints ask for it (issue 12, item 4).
func TestAdminNeedsTokenBeyondLoopback(t *testing.T) {
	tests := []struct {
		http, token string
		wantErr     bool
	}{
		{":0", "", true},
		{"0.0.0.0:8080", "", true},
		{"[::]:8080", "", true},
		{"feed.example.com:8080", "", true},
		{"127.0.0.1:0", "", false},
		{"localhost:8080", "", false},
		{"[::1]:8080", "", false},
		{":0", "tok", false},
	}
	for _, tt := range tests {
		m := renderer.NewMain()
		args := []string{"-http", tt.http, "-db", "x.db"}
		if tt.token != "" {
			args = append(args, "-admin-token", tt.token)
		}
		err := m.ParseFlags(args)
		if (err != nil) != tt.wantErr {
			t.Errorf("-http %s token %q: %v, want error %v", tt.http, tt.token, err, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "-admin-token") {
			t.Errorf("-http %s: error %q does not say what to do", tt.http, err)
		}
	}
	if err := renderer.NewMain().ParseFlags([]string{"-trusted-proxies", "10.0.0.0/99"}); err == nil {
		t.Error("-trusted-proxies 10.0.0.0/99 accepted")
	}

	rs := redistest.MustStart(t)
	m := MustRunMain(t, rs.URL(), filepath.Join(t.TempDir(), "feed.db"), "pub", "-http", "0.0.0.0:0", "-admin-token", "tok")
	_, port, _ := net.SplitHostPort(m.Addr())
	for _, tt := range []struct {
		auth string
		want int
	}{{"", 401}, {"tok", 401}, {"Bearer tok", 200}, {"bearer tok", 200}} {
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+port+"/status", nil)
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("/status with Authorization %q: %d, want %d", tt.auth, resp.StatusCode, tt.want)
		}
	}
}

// TestHTTPFlagIsHostPort: an -http that is no host:port with a port
// net.Listen takes is refused saying what is wrong with it, and a port
// alone is answered with the addresses meant. "-http 8080" and "-http
// 127.0.0.1" were refused for listening beyond loopback without
// -admin-token, which they do not; "-http 127.0.0.1:99999" passed, and
// Run failed on it (exit status 1, a failed start).
func TestHTTPFlagIsHostPort(t *testing.T) {
	for _, tt := range []struct {
		http string
		want string // the error begins so; "" = accepted
	}{
		{"8080", "-http 8080: a port alone: want host:port, :8080 (every interface, with -admin-token) or 127.0.0.1:8080 (loopback)"},
		{"127.0.0.1", "-http 127.0.0.1: want host:port, 127.0.0.1:8080 or :8080 say: "},
		{"feed.example.com", "-http feed.example.com: want host:port"},
		{"localhost:", "-http localhost:: no port"},
		{"127.0.0.1:99999", `-http 127.0.0.1:99999: port "99999": want a number up to 65535`},
		{"127.0.0.1:-1", `-http 127.0.0.1:-1: port "-1"`},
		{"127.0.0.1:0", ""},
		{"localhost:8080", ""},
		{"[::1]:8080", ""},
		{"127.0.0.1:http", ""},
	} {
		err := renderer.NewMain().ParseFlags([]string{"-db", "x.db", "-http", tt.http})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("-http %s: %v", tt.http, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("-http %s: %v, want an error beginning %q", tt.http, err, tt.want)
		}
	}
}

// TestWSEngineFlag: -ws-engine takes std or nbio, nbio by default, and
// refuses anything else at parse time, before the consumer starts (issue
// 14).
func TestWSEngineFlag(t *testing.T) {
	tests := []struct {
		args    []string
		env     string // $FEED_WS_ENGINE
		want    string
		wantErr bool
	}{
		{nil, "", web.WSEngineNbio, false},
		{nil, "std", web.WSEngineStd, false},
		{[]string{"-ws-engine", "std"}, "", web.WSEngineStd, false},
		{[]string{"-ws-engine", "nbio"}, "std", web.WSEngineNbio, false},
		{[]string{"-ws-engine", "epoll"}, "", "", true},
		{[]string{"-ws-engine", "nbio", "-send-buffer", "0"}, "", "", true},
	}
	for _, tt := range tests {
		t.Setenv("FEED_WS_ENGINE", tt.env)
		if tt.env == "" {
			os.Unsetenv("FEED_WS_ENGINE")
		}
		m := renderer.NewMain()
		err := m.ParseFlags(append([]string{"-db", "x.db"}, tt.args...))
		if (err != nil) != tt.wantErr {
			t.Errorf("%q, $FEED_WS_ENGINE %q: %v, want error %v", tt.args, tt.env, err, tt.wantErr)
		}
		if err == nil && m.Config.WSEngine != tt.want {
			t.Errorf("%q, $FEED_WS_ENGINE %q: engine %q, want %q", tt.args, tt.env, m.Config.WSEngine, tt.want)
		}
	}
}

// TestWSCompressFlag: websocket compression is on unless -ws-compress=false
// or FEED_WS_COMPRESS=false turns it off, the flag over the environment.
func TestWSCompressFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  string // $FEED_WS_COMPRESS
		want bool
	}{
		{nil, "", true},
		{nil, "false", false},
		{[]string{"-ws-compress=false"}, "", false},
		{[]string{"-ws-compress=true"}, "false", true},
	} {
		t.Setenv("FEED_WS_COMPRESS", tt.env)
		if tt.env == "" {
			os.Unsetenv("FEED_WS_COMPRESS")
		}
		m := renderer.NewMain()
		if err := m.ParseFlags(append([]string{"-db", "x.db"}, tt.args...)); err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		if m.Config.WSCompress != tt.want {
			t.Errorf("%q, $FEED_WS_COMPRESS %q: compress %v, want %v", tt.args, tt.env, m.Config.WSCompress, tt.want)
		}
	}
}

// TestLogLevelFlag: -log-level takes slog's level names, in any case; a
// typo refuses to start instead of logging at info.
func TestLogLevelFlag(t *testing.T) {
	for _, tt := range []struct {
		level   string
		wantErr bool
	}{
		{"debug", false}, {"INFO", false}, {"warn", false}, {"error", false},
		{"verbose", true}, {"", true},
	} {
		err := renderer.NewMain().ParseFlags([]string{"-db", "x.db", "-log-level", tt.level})
		if (err != nil) != tt.wantErr {
			t.Errorf("-log-level %q: %v, want error %v", tt.level, err, tt.wantErr)
		}
	}
}

// TestPresenceFlags: -presence-ttl must outlive two beats, and the web's
// beats are at least web.PresenceMinGap apart however short -presence-every.
func TestPresenceFlags(t *testing.T) {
	for _, tt := range []struct {
		every, ttl string
		wantErr    bool
	}{
		{"2s", "15s", false},
		{"200ms", "1s", false},
		{"2s", "3s", true},
		{"50ms", "100ms", true},
		{"0s", "1s", true},
	} {
		err := renderer.NewMain().ParseFlags([]string{"-db", "x.db", "-presence-every", tt.every, "-presence-ttl", tt.ttl})
		if (err != nil) != tt.wantErr {
			t.Errorf("-presence-every %s -presence-ttl %s: %v, want error %v", tt.every, tt.ttl, err, tt.wantErr)
		}
	}
}

// TestParseFlagsRefusesUnusableValues: an empty -group or -db, or a -redis
// that is no Redis URL, is a bad value, refused by ParseFlags (exit status
// 2, docs/operations.md), before anything is opened. They used to pass,
// and Run failed on them (exit status 1, as for a failed start, which an
// orchestrator restarts); an empty -group only after it had created and
// migrated the store file.
func TestParseFlagsRefusesUnusableValues(t *testing.T) {
	for _, args := range [][]string{
		{"-group", ""},
		{"-db", ""},
		{"-redis", ""},
		{"-redis", "127.0.0.1:6380"},
		{"-redis", "http://127.0.0.1:6380"},
		{"-redis", "redis://127.0.0.1:6380/x"},
		{"-redis", "redis://127.0.0.1:6380?addr=127.0.0.1:6381&dial_timeout=soon"},
		{"-peer-timeout", "-1s"}, // was taken for 0, the kernel's 15 minutes
		// Positive, but under the consumer's floor (feed.MinIdleFloor):
		// feed.Open refused it, so Run failed (exit 1) after it had
		// created and migrated the store file.
		{"-min-idle", "1ms"},
	} {
		if err := renderer.NewMain().ParseFlags(append([]string{"-consumer", "x"}, args...)); err == nil {
			t.Errorf("%q accepted", args)
		} else {
			t.Logf("%q: %v", args, err)
		}
	}
	for _, url := range []string{
		"redis://127.0.0.1:6380/0",
		"rediss://user:pw@feed.example.com:6380/1",
		"unix:///run/redis.sock",
		"redis://127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002",
	} {
		if err := renderer.NewMain().ParseFlags([]string{"-consumer", "x", "-redis", url}); err != nil {
			t.Errorf("-redis %s: %v", url, err)
		}
	}
}

// TestPublicHostsFlag: -public-hosts takes host, host:port and *.domain
// names, IPv6 addresses with or without brackets; an entry that is no such
// name (a URL, a path, userinfo, a port that is no number) is refused at
// parse time. It used to be taken as it was and matched no Host ever: a
// renderer started with -public-hosts https://feed.example.com answered
// 421 to every websocket, event stream and admin request of its site.
func TestPublicHostsFlag(t *testing.T) {
	for _, tt := range []struct {
		hosts   string
		wantErr bool
	}{
		{"feed.example.com", false},
		{"feed.example.com:8443, *.example.com", false},
		{"127.0.0.1,::1,[::1]:8080,FEED.example.com.", false},
		{"https://feed.example.com", true},
		{"feed.example.com/", true},
		{"feed.example.com/live", true},
		{"user@feed.example.com", true},
		{"feed.example.com:https", true},
		{"feed.example.com:99999", true},
		{"feed.example.com:", true},
		{":8080", true},
		{"feed example.com", true},
	} {
		err := renderer.NewMain().ParseFlags([]string{"-db", "x.db", "-public-hosts", tt.hosts})
		if (err != nil) != tt.wantErr {
			t.Errorf("-public-hosts %q: %v, want error %v", tt.hosts, err, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "-public-hosts") {
			t.Errorf("-public-hosts %q: error %q does not name the flag", tt.hosts, err)
		}
	}
}

// TestAllowedOriginsFlag: -allowed-origins takes host patterns, with a
// port or a scheme or neither; an entry no Origin can ever match (one
// with a path, as a URL copied from the address bar has, userinfo, or a
// malformed pattern) is refused at parse time. It used to be taken, and
// the origins the operator meant to allow got 403.
func TestAllowedOriginsFlag(t *testing.T) {
	for _, tt := range []struct {
		origins string
		wantErr bool
	}{
		{"app.example.com", false},
		{"*.example.com, app.example.com:8443", false},
		{"https://app.example.com,HTTPS://*.Example.com:443,[a-c].example.com", false},
		{"https://app.example.com/", true},
		{"app.example.com/live", true},
		{"https://user@app.example.com", true},
		{"https://[app.example.com", true},
		{"https://", true},
	} {
		err := renderer.NewMain().ParseFlags([]string{"-db", "x.db", "-allowed-origins", tt.origins})
		if (err != nil) != tt.wantErr {
			t.Errorf("-allowed-origins %q: %v, want error %v", tt.origins, err, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "-allowed-origins") {
			t.Errorf("-allowed-origins %q: error %q does not name the flag", tt.origins, err)
		}
	}
}

// TestDurationFlagFloors: a duration flag under its floor is refused by
// ParseFlags (exit status 2) with a message naming the flag and the floor,
// from the command line or the environment; the floor itself is taken.
// Any positive value was taken: -games-refresh 1ns and -claim-every 1ns
// made busy loops of calls to Redis, -file-check 1ns one of stats,
// -response-timeout 1ns cut every response, and -peer-timeout 500µs set
// TCP_USER_TIMEOUT to 0 ms, the kernel's default of about 15 minutes.
func TestDurationFlagFloors(t *testing.T) {
	for _, tt := range []struct {
		flag, env string
		floor     time.Duration
		zeroOK    bool // 0 means something of its own
	}{
		{"min-idle", "FEED_MIN_IDLE", feed.MinIdleFloor, false},
		{"claim-every", "FEED_CLAIM_EVERY", renderer.ClaimEveryFloor, false},
		{"games-refresh", "FEED_GAMES_REFRESH", renderer.GamesRefreshFloor, false},
		{"active-window", "FEED_ACTIVE_WINDOW", renderer.ActiveWindowFloor, false},
		{"sweep-every", "FEED_SWEEP_EVERY", renderer.SweepEveryFloor, false},
		{"response-timeout", "FEED_RESPONSE_TIMEOUT", renderer.ResponseTimeoutFloor, false},
		{"future-bound", "FEED_FUTURE_BOUND", pipeline.MaxAheadFloor, false},
		{"file-check", "FEED_FILE_CHECK", renderer.FileCheckFloor, false},
		{"peer-timeout", "FEED_PEER_TIMEOUT", renderer.PeerTimeoutFloor, true},
	} {
		t.Run(tt.flag, func(t *testing.T) {
			parse := func(v time.Duration, env bool) error {
				args := []string{"-db", "x.db"}
				if env {
					t.Setenv(tt.env, v.String())
				} else {
					args = append(args, "-"+tt.flag, v.String())
				}
				return renderer.NewMain().ParseFlags(args)
			}
			for _, env := range []bool{false, true} {
				for _, v := range []time.Duration{time.Nanosecond, tt.floor - time.Nanosecond, -time.Second} {
					err := parse(v, env)
					if err == nil {
						t.Errorf("-%s %v (environment: %v) accepted, under its floor %v", tt.flag, v, env, tt.floor)
					} else if want := fmt.Sprintf("-%s %v: want ", tt.flag, v); !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "at least "+tt.floor.String()) {
						t.Errorf("-%s %v (environment: %v): %q, want %q… naming the floor %v", tt.flag, v, env, err, want, tt.floor)
					}
				}
				for _, v := range []time.Duration{tt.floor, 0} {
					if v == 0 && !tt.zeroOK {
						if err := parse(v, env); err == nil {
							t.Errorf("-%s 0 (environment: %v) accepted", tt.flag, env)
						}
						continue
					}
					if err := parse(v, env); err != nil {
						t.Errorf("-%s %v (environment: %v): %v", tt.flag, v, env, err)
					}
				}
			}
		})
	}
}

// TestParseFlagsRefusesBadGroup: -group (and $FEED_GROUP) names the lease
// keys and the group's index of leases, which share the hash tag {GROUP}
// (internal/event/keys.go). A name with { or } moved the hash tag of those
// keys (on a cluster, to slots of their own), and whitespace, control
// characters or a name of any length made odd keys and log lines; they were
// all taken. ParseFlags refuses them (exit status 2) and says what a group
// name may be.
func TestParseFlagsRefusesBadGroup(t *testing.T) {
	for _, tt := range []struct {
		name, group string
	}{
		{"empty", ""},
		{"open brace", "a{b"},
		{"close brace", "a}b"},
		{"hash tag", "{x}"},
		{"space", "host a"},
		{"tab", "a\tb"},
		{"newline", "a\nb"},
		{"NUL", "a\x00b"},
		{"DEL", "a\x7fb"},
		{"no-break space", "a\u00a0b"},
		{"not UTF-8", "a\xffb"},
		{"too long", strings.Repeat("g", event.MaxGroupLen+1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := renderer.NewMain().ParseFlags([]string{"-consumer", "x", "-group", tt.group})
			if err == nil || !strings.Contains(err.Error(), "-group") || !strings.Contains(err.Error(), "want") {
				t.Errorf("-group %q: %v, want an error that names -group and says what is allowed", tt.group, err)
			}
			if tt.group == "" || strings.Contains(tt.group, "\x00") {
				return // an empty variable is the default; no variable holds a NUL
			}
			t.Setenv("FEED_GROUP", tt.group)
			if err := renderer.NewMain().ParseFlags([]string{"-consumer", "x"}); err == nil {
				t.Errorf("$FEED_GROUP %q accepted", tt.group)
			}
		})
	}
	for _, group := range []string{"feed", "host-a", "feed.example.com", "grp_1", "é", strings.Repeat("g", event.MaxGroupLen)} {
		if err := renderer.NewMain().ParseFlags([]string{"-consumer", "x", "-group", group}); err != nil {
			t.Errorf("-group %q: %v", group, err)
		}
	}
}
