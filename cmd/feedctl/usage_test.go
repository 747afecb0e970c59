package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestUsageNeedsNoRedis: feedctl without a command, with help or with an
// unknown one answers without opening Redis, which would ask the server
// (the default address is someone's Redis) only to print usage.
func TestUsageNeedsNoRedis(t *testing.T) {
	url, dialed := mustCountDials(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, args := range [][]string{nil, {"help"}, {"-h"}, {"nope"}} {
		var out bytes.Buffer
		err := Run(ctx, append([]string{"-redis", url}, args...), strings.NewReader(""), &out, &out)
		if err != nil && !errors.Is(err, flag.ErrHelp) && !strings.Contains(err.Error(), "unknown command") {
			t.Errorf("feedctl %v: %v", args, err)
		}
		if !strings.Contains(out.String(), "usage: feedctl") {
			t.Errorf("feedctl %v printed no usage", args)
		}
	}
	if n := dialed.Load(); n != 0 {
		t.Fatalf("usage, help and an unknown command opened %d connections to Redis", n)
	}
	// The listener counts what reaches it: a command does.
	if err := Run(ctx, []string{"-redis", url, "ping"}, strings.NewReader(""), new(bytes.Buffer), new(bytes.Buffer)); err == nil {
		t.Fatal("ping of a listener that is no Redis succeeded")
	}
	if dialed.Load() == 0 {
		t.Fatal("ping did not reach the listener: the check above proves nothing")
	}
}

// TestCommandRefusalNeedsNoRedis: a command's -h, and a command line it
// refuses (a flag it does not know or a value its type refuses, a stray
// argument, a missing or invalid -game, no -db, no -older-than), answer
// without opening Redis, as usage does: Redis was opened first, so a
// stopped Redis put a "redis: connection pool: failed to dial" line above
// the command's usage, a hung one held it 2 s, and the default address,
// someone's Redis, was asked to print a command's help.
func TestCommandRefusalNeedsNoRedis(t *testing.T) {
	url, dialed := mustCountDials(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tt := range []struct {
		args []string
		want string // in the error, or in stderr for the flag package's own
	}{
		{[]string{"status", "-h"}, "Usage of status"},
		{[]string{"status", "-recent", "x"}, `invalid value "x"`},
		{[]string{"status", "-recent", "0"}, "-recent 0"},
		{[]string{"status", "stray"}, "unexpected argument"},
		{[]string{"dead"}, "want list, requeue or drop"},
		{[]string{"dead", "nope"}, "unknown subcommand"},
		{[]string{"dead", "list", "-h"}, "Usage of dead list"},
		{[]string{"dead", "list"}, `-game ""`},
		{[]string{"dead", "list", "-game", "g-1", "-n", "-1"}, "-n -1"},
		{[]string{"dead", "requeue", "-game", "g-1"}, "exactly one of -id and -all"},
		{[]string{"dead", "requeue", "-game", "g-1", "-all", "-set", "a=b"}, "-set needs -id"},
		{[]string{"dead", "drop", "-game", "Bad Name", "-all"}, `-game "Bad Name"`},
		{[]string{"replay", "-h"}, "Usage of replay"},
		{[]string{"replay"}, `-game ""`},
		{[]string{"rebuild", "-h"}, "Usage of rebuild"},
		{[]string{"rebuild"}, "-db is required"},
		{[]string{"prune", "-h"}, "Usage of prune"},
		{[]string{"prune", "-older-than", "abc"}, `invalid value "abc"`},
		{[]string{"prune"}, "-older-than is required"},
		{[]string{"ping", "-h"}, "Usage of ping"},
		{[]string{"ping", "stray"}, "unexpected argument"},
	} {
		var out, errOut bytes.Buffer
		err := Run(ctx, append([]string{"-redis", url}, tt.args...), strings.NewReader(""), &out, &errOut)
		if err == nil {
			t.Errorf("feedctl %v: no error", tt.args)
			continue
		}
		if !strings.Contains(err.Error()+errOut.String(), tt.want) {
			t.Errorf("feedctl %v: %v\n%s, want %q", tt.args, err, errOut.String(), tt.want)
		}
		if strings.Contains(errOut.String(), "redis:") {
			t.Errorf("feedctl %v wrote a Redis line:\n%s", tt.args, errOut.String())
		}
	}
	if n := dialed.Load(); n != 0 {
		t.Fatalf("commands refused, or asked for help, opened %d connections to Redis", n)
	}
}

// TestEveryFlagDocumented: each command's flags, as its -h lists them, are
// named in feedctl's usage and in the operator docs (the README's feedctl
// table or docs/operations.md), so a flag added later cannot stay hidden
// (dead list's -n did).
func TestEveryFlagDocumented(t *testing.T) {
	s := redistest.MustStart(t)
	var docs strings.Builder
	for _, f := range []string{"../../README.md", "../../docs/operations.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
	}
	flagLine := regexp.MustCompile(`(?m)^  -([a-z-]+)`)
	for _, cmd := range [][]string{
		{"status"}, {"dead", "list"}, {"dead", "requeue"}, {"dead", "drop"},
		{"replay"}, {"rebuild"}, {"prune"},
	} {
		_, errOut, err := runCtl(t, s.Addr, append(cmd, "-h")...)
		if !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("feedctl %v -h: %v", cmd, err)
		}
		flags := flagLine.FindAllStringSubmatch(errOut, -1)
		if len(flags) == 0 {
			t.Fatalf("feedctl %v -h listed no flags:\n%s", cmd, errOut)
		}
		for _, m := range flags {
			name := "-" + m[1]
			if !regexp.MustCompile(`\Q` + name + `\E\b`).MatchString(usage) {
				t.Errorf("feedctl %v: %s is not in the usage text", cmd, name)
			}
			if !strings.Contains(docs.String(), name) {
				t.Errorf("feedctl %v: %s is in neither README.md nor docs/operations.md", cmd, name)
			}
		}
	}
}

// TestDeadHelp: "feedctl dead -h" (or -help, --help) prints the dead
// commands' usage and exits as every other -h does (flag.ErrHelp, exit
// 2), without Redis. It was refused as an unknown subcommand, "dead:
// unknown subcommand "-h"", exit 1, after Redis had been opened.
func TestDeadHelp(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help"} {
		t.Run(arg, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := Run(context.Background(), []string{"-redis", "redis://127.0.0.1:1", "dead", arg}, strings.NewReader(""), &out, &errOut)
			if !errors.Is(err, flag.ErrHelp) {
				t.Errorf("feedctl dead %s: %v, want flag.ErrHelp (exit 2)\n%s", arg, err, errOut.String())
			}
			for _, sub := range []string{"dead list", "dead requeue", "dead drop"} {
				if !strings.Contains(errOut.String(), sub) {
					t.Errorf("feedctl dead %s: usage does not name %q:\n%s", arg, sub, errOut.String())
				}
			}
		})
	}
}

// mustCountDials listens where no Redis is and counts the connections
// made to it: a URL for -redis, and the count.
func mustCountDials(tb testing.TB) (string, *atomic.Int64) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	dialed := new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialed.Add(1)
			c.Close()
		}
	}()
	return "redis://" + ln.Addr().String(), dialed
}
