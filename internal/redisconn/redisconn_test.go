package redisconn_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/redisconn"
	"github.com/codemojex/feed/internal/testkit/redistest"
)

func TestOpen(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		wantErr bool
	}{
		{"redis scheme", "redis://127.0.0.1:1/0", false},
		{"unix socket", "unix:///tmp/redis.sock", false},
		{"no scheme", "127.0.0.1:6379", true},
		{"bad scheme", "http://127.0.0.1:6379", true},
		{"bad db", "redis://127.0.0.1:1/x", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rdb, err := redisconn.Open(tt.url)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Open(%q) error = %v, want error %v", tt.url, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			defer rdb.Close()
			c, ok := rdb.(*redis.Client)
			if !ok {
				t.Fatalf("Open(%q) = %T, want *redis.Client", tt.url, rdb)
			}
			if !c.Options().ContextTimeoutEnabled {
				t.Errorf("Open(%q): ContextTimeoutEnabled = false, want true", tt.url)
			}
		})
	}
}

// TestCheckSaysWhatIsMeant: a -redis that is no URL is refused saying so,
// with the URL meant when it is a host:port, and a redis:// URL without a
// host is refused: go-redis takes it for localhost (port 6379 unless one is
// given), the default address, where someone else's Redis may answer.
// "redis:6380" and "redis:///0" passed, and "127.0.0.1:6379" was refused as
// "first path segment in URL cannot contain colon". Only Check is asked
// here: Open of those URLs would have dialled 127.0.0.1:6379 before the
// fix; TestOpenRefusesHostless holds Open to the same check.
func TestCheckSaysWhatIsMeant(t *testing.T) {
	for _, tt := range []struct {
		url  string
		want string // in the error; "" = accepted
	}{
		{"", "empty: want redis://HOST:PORT[/DB]"},
		{"6379", `"6379" is no URL: want redis://HOST:PORT[/DB]`},
		{"127.0.0.1:6380", `"127.0.0.1:6380" is no URL: want redis://127.0.0.1:6380`},
		{"localhost:6380", `"localhost:6380" is no URL: want redis://localhost:6380`},
		{"redis.internal", `"redis.internal" is no URL: want redis://HOST:PORT[/DB]`},
		{"http://127.0.0.1:6380", `scheme "http": want redis://HOST:PORT[/DB]`},
		{"redis:6380", `"redis:6380" names no host`},
		{"redis:///0", `"redis:///0" names no host`},
		{"redis://:6380/0", `"redis://:6380/0" names no host`},
		{"rediss://user:pw@/0", `names no host`},
		{"redis://?addr=127.0.0.1:7001", `names no host`},
		{"redis://127.0.0.1:6380/0", ""},
		{"rediss://user:pw@feed.example.com:6380/1", ""},
		{"unix:///run/redis.sock", ""},
		{"unix:/run/redis.sock", ""},
		{"redis://127.0.0.1:7000?addr=127.0.0.1:7001", ""},
	} {
		wantCheck(t, tt.url, tt.want)
	}
}

// TestOpenRefusesHostless: Open refuses a redis:// URL without a host, as
// Check does, before it dials anything. The port is a listener of the
// test's own, which go-redis dialled on localhost before the fix.
func TestOpenRefusesHostless(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var dialled atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	url := "redis://:" + port + "/0"
	if rdb, err := redisconn.Open(url); err == nil || !strings.Contains(err.Error(), "names no host") {
		if rdb != nil {
			rdb.Close()
		}
		t.Fatalf("Open(%q) = %v, want it refused as naming no host", url, err)
	}
	if n := dialled.Load(); n != 0 {
		t.Fatalf("Open(%q) dialled %d times", url, n)
	}
}

// TestOpenHonoursDeadline checks that a call to a server that accepts the
// connection and never answers (a hung Redis) ends at the context's
// deadline, well before go-redis's own read timeout and retries; and that
// OpenContext's cluster probe of such a server ends at its context's
// deadline with an error that wraps it, where Open's runs out of
// ProbeTimeout and gives a single-node client. Over TLS (rediss://) the
// server never answers the handshake: go-redis's TLS dial itself ends at
// its dial timeout alone, and the caller must not wait for it.
func TestOpenHonoursDeadline(t *testing.T) {
	for _, scheme := range []string{"redis", "rediss"} {
		t.Run(scheme, func(t *testing.T) {
			silent := silentListener(t)
			url := scheme + "://" + silent + "/0"
			probeCtx, cancelProbe := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancelProbe()
			if rdb, err := redisconn.OpenContext(probeCtx, url); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "cluster probe of "+silent) {
				if rdb != nil {
					rdb.Close()
				}
				t.Fatalf("OpenContext of a silent server with a 100ms deadline: %v, want the probe ended by the deadline", err)
			}
			rdb, err := redisconn.Open(url)
			if err != nil {
				t.Fatal(err)
			}
			defer rdb.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			err = rdb.Ping(ctx).Err()
			took := time.Since(start)
			if err == nil {
				t.Fatal("PING to a silent server returned no error")
			}
			if ctx.Err() == nil {
				t.Fatalf("PING ended before its deadline: %v", err)
			}
			// Without ContextTimeoutEnabled the call would wait for go-redis's
			// read timeout (and retry); with it the deadline ends it.
			const readTimeout = 3 * time.Second // go-redis's default
			if took >= readTimeout {
				t.Errorf("PING took %v, not ended by its 100ms deadline", took)
			}
		})
	}
}

// TestCheckHidesPassword: an error about a -redis URL quotes it with its
// password as "xxxxx", as url.URL.Redacted does, also a URL url.Parse
// refuses. The renderer logs a refused -redis (ERROR "bad flags"), and
// the password, which the docs say to keep out of process lists in
// $REDIS_URL, went to the logs with it.
func TestCheckHidesPassword(t *testing.T) {
	for _, tt := range []struct {
		url  string
		want string // in the error
	}{
		{"redis://:s3cret@127.0.0.1:bad/0", `"redis://:xxxxx@127.0.0.1:bad/0"`},
		{"http://u:s3cret@127.0.0.1:1/0", `"http://u:xxxxx@127.0.0.1:1/0": scheme "http"`},
		{"redis://u:s3cret@:6380", `"redis://u:xxxxx@:6380" names no host`},
		{"rediss://u:s3c@ret@/0", `"rediss://u:xxxxx@/0" names no host`},
		{"redis://u:s3cret@127.0.0.1:bad?addr=127.0.0.1:7001", `"redis://u:xxxxx@127.0.0.1:bad?addr=127.0.0.1:7001"`},
	} {
		err := redisconn.Check(tt.url)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "s3c") {
			t.Errorf("Check(%q) = %v, want an error saying %q without the password", tt.url, err, tt.want)
		}
	}
	for _, tt := range []struct{ url, want string }{
		{"redis://u:s3cret@h:6379/0", "redis://u:xxxxx@h:6379/0"},
		{"redis://u@h:6379/0", "redis://u@h:6379/0"},
		{"redis://h:6379/0?x=a@b", "redis://h:6379/0?x=a@b"},
		{"127.0.0.1:6379", "127.0.0.1:6379"},
	} {
		if got := redisconn.Redact(tt.url); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

// TestCheckHidesPasswordWithoutScheme: a -redis that lost its "redis://"
// ("u:pass@host:6379", "redis:/u:pass@host") is refused quoting it, and
// the quote kept its password: Redact looked for "://" and returned such a
// value as it was, so the renderer's ERROR "bad flags" (and gamesim's and
// feedctl's refusals, and -h with it in $REDIS_URL) printed the password,
// the hint "want redis://u:pass@host" a second time.
func TestCheckHidesPasswordWithoutScheme(t *testing.T) {
	for _, tt := range []struct {
		url  string
		want string // Redact's
	}{
		{"u:s3cret@redis.internal:6379", "u:xxxxx@redis.internal:6379"},
		{":s3cret@10.0.0.5:6379", ":xxxxx@10.0.0.5:6379"},
		{"u:s3cret@redis.internal", "u:xxxxx@redis.internal"},
		{"redis:/u:s3cret@h:6379", "redis:xxxxx@h:6379"},
		{"redis:u:s3cret@h:6379/0", "redis:xxxxx@h:6379/0"},
		{"redis//u:s3cret@h:6379/0", "redis//u:xxxxx@h:6379/0"},
		{"redis://:s3/c+d=@h:6379", "redis://:xxxxx@h:6379"},
		{"redis://u:s3/cret@h:6379/0", "redis://u:xxxxx@h:6379/0"},
	} {
		t.Run(tt.url, func(t *testing.T) {
			if got := redisconn.Redact(tt.url); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.url, got, tt.want)
			}
			err := redisconn.Check(tt.url)
			if err == nil || strings.Contains(err.Error(), "s3") {
				t.Errorf("Check(%q) = %v, want an error without the password", tt.url, err)
			}
		})
	}
}

// silentListener returns the address of a listener that accepts and never
// answers (a hung server), closed when the test ends.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return ln.Addr().String()
}

// wantCheck checks that Check takes url (want "") or refuses it with an
// error that says want.
func wantCheck(t *testing.T, url, want string) {
	t.Helper()
	err := redisconn.Check(url)
	switch {
	case want == "" && err != nil:
		t.Errorf("Check(%q): %v", url, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("Check(%q) = %v, want an error saying %q", url, err, want)
	}
}

// wantOpenRefused checks that OpenContext refuses url at once (before
// its 10 s context ends) with an error that says each of want and not
// the password "s3cret".
func wantOpenRefused(t *testing.T, url string, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb, err := redisconn.OpenContext(ctx, url)
	if err == nil {
		rdb.Close()
		t.Fatalf("OpenContext(%q) = %T, want an error", url, rdb)
	}
	t.Logf("OpenContext(%q): %v", url, err)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("OpenContext(%q) held until its context ended: %v", url, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("OpenContext(%q) = %v, want it to say %q", url, err, w)
		}
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("OpenContext(%q) = %v: the password is in the error", url, err)
	}
}

// TestOpenRefusesCredentials: a single node that refuses the URL's
// credentials (a wrong password, a user it has not, no password where it
// wants one) fails the start, saying that the server refused the URL's
// user and where to look, without the password; and so does a database
// past the server's (/99 of 16). Until 7 Dec 2026 Open
// gave a client, the binary started, and every call failed with the bare
// WRONGPASS: the renderer served and said not ready, while the Sentinel
// form already failed its start on the same mistake.
func TestOpenRefusesCredentials(t *testing.T) {
	s := redistest.MustStart(t)
	ctx := context.Background()
	if err := s.Client(t).Do(ctx, "ACL", "SETUSER", "feeder", "on", ">right", "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Client(t).ConfigSet(ctx, "requirepass", "rightdefault").Err(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, url, reply string }{
		{"wrong password", "redis://feeder:s3cret@" + s.Addr, "WRONGPASS"},
		{"unknown user", "redis://nobody:s3cret@" + s.Addr, "WRONGPASS"},
		{"wrong default password", "redis://:s3cret@" + s.Addr + "/0", "WRONGPASS"},
		{"no password", "redis://" + s.Addr, "NOAUTH"},
		// Until 7 Dec 2026 a database past the server's started too.
		{"database past the server's", "redis://feeder:right@" + s.Addr + "/99", "DB index is out of range"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := "refuses the URL's user"
			if tt.reply == "DB index is out of range" {
				want = "has no database 99"
			}
			wantOpenRefused(t, tt.url, tt.reply, want, s.Addr, "Redis refuses the renderer")
		})
	}
	rdb, err := redisconn.Open("redis://feeder:right@" + s.Addr)
	if err != nil {
		t.Fatalf("Open with the right password: %v", err)
	}
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING with the right password: %v", err)
	}
}
