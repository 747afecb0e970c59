package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestUsageListsGlobalFlags: feedctl's usage (-h, help, no command, an
// unknown command) lists each global flag with the environment variable
// it falls back to and its default, as renderer -h and gamesim -h list
// theirs (README, "Binaries"). Until 6 Dec 2026 it named the flags in its
// first line only: $FEEDCTL_TIMEOUT and the others were in the README
// alone.
func TestUsageListsGlobalFlags(t *testing.T) {
	for _, env := range []string{"REDIS_URL", "FEED_GROUP", "FEED_FUTURE_BOUND", "FEEDCTL_TIMEOUT"} {
		t.Setenv(env, "")
	}
	t.Setenv("REDIS_URL", "redis://user:hunter2@127.0.0.1:1/0")
	for _, args := range [][]string{{"-h"}, {"help"}, nil, {"nope"}, {"dead", "-h"}} {
		var out bytes.Buffer
		err := Run(context.Background(), args, strings.NewReader(""), &out, &out)
		if err != nil && !errors.Is(err, flag.ErrHelp) && !strings.Contains(err.Error(), "unknown command") {
			t.Fatalf("feedctl %v: %v", args, err)
		}
		text := out.String()
		for _, want := range []string{
			"(env REDIS_URL)", "(env FEED_GROUP)", `(default "feed")`,
			"(env FEED_FUTURE_BOUND)", "(default 10m0s)", "(env FEEDCTL_TIMEOUT)", "(default 10s)",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("feedctl %v: usage lacks %s:\n%s", args, want, text)
			}
		}
		if strings.Contains(text, "hunter2") {
			t.Errorf("feedctl %v: usage shows $REDIS_URL's password:\n%s", args, text)
		}
		if strings.Count(text, "usage: feedctl") != 1 {
			t.Errorf("feedctl %v: usage written %d times:\n%s", args, strings.Count(text, "usage: feedctl"), text)
		}
	}
}
