package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestUsageNeedsNoRedis: feedctl without a command, with help or with an
// unknown one answers without opening Redis, which would ask the server
// (the default address is someone's Redis) only to print usage.
func TestUsageNeedsNoRedis(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var dialed atomic.Int64
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := "redis://" + ln.Addr().String()
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
