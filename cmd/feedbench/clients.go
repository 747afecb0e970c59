package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/codemojex/feed/cmd/feedbench/internal/bench"
	"github.com/codemojex/feed/internal/gamesim"
	"github.com/codemojex/feed/internal/proc"
)

// runClients is the fan-out's client process: it connects -n websocket
// clients, says "connected N" on stdout, and on "report EXPECTED" from stdin
// waits (up to -wait) until it holds EXPECTED line deliveries (besides the
// one each client backfills), then
// prints them as one JSON document (bench.ClientReport), and exits when its
// stdin closes.
func runClients(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("feedbench clients", flag.ContinueOnError)
	n := fs.Int("n", 10000, "websocket clients")
	url := fs.String("url", "", "renderer base URL, http://host:port")
	prefix := fs.String("prefix", "fan", "game name prefix")
	games := fs.Int("games", 100, "games (GAME = PREFIX-i, i in 1..games); client i watches game i%games")
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for the expected deliveries")
	streams := fs.Bool("stream", false, "take the event stream (/games/GAME/events) instead of websockets")
	backfilled := fs.Int("backfilled", 1, "line frames each client gets on connecting (the renderer backfills the seed line; the bare broadcaster none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := raiseFileLimit(); err != nil {
		return err
	}
	names := make([]string, *games)
	for i := range names {
		names[i] = gamesim.GameName(*prefix, i+1)
	}
	start := time.Now()
	sw, err := bench.Connect(ctx, bench.SwarmConfig{BaseURL: *url, Games: names, N: *n, Streams: *streams})
	if err != nil {
		return err
	}
	defer sw.Close()
	fmt.Printf("connected %d in %v\n", *n, time.Since(start).Round(time.Millisecond))
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(strings.TrimSpace(in.Text()), " ")
		if cmd != "report" {
			continue
		}
		expected, _ := strconv.Atoi(arg)
		_, _ = proc.Poll(ctx, *wait, "deliveries", func() (bool, error) {
			return len(sw.Deliveries()) >= expected+*backfilled**n, nil
		})
		frames, _, _ := sw.Received()
		rep := bench.ClientReport{Connected: *n, Frames: frames, Deliveries: sw.Deliveries()}
		var derr error
		rep.Lost, derr = sw.LostWhy()
		if derr != nil {
			rep.DropErr = derr.Error()
		}
		if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
			return err
		}
		// Stay connected until stdin closes: the parent reads the
		// renderer's memory with the clients still there.
		for in.Scan() {
		}
		return in.Err()
	}
	return in.Err()
}

// runBroadcaster is the bare broadcaster baseline's process: it says
// "listening ADDR" on stdout and serves until its stdin closes.
func runBroadcaster(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("feedbench broadcaster", flag.ContinueOnError)
	redisURL := fs.String("redis", "", "Redis URL to subscribe to")
	addr := fs.String("http", "127.0.0.1:0", "listen address")
	engine := fs.String("engine", bench.EngineStd, "sockets on: std (net/http + coder/websocket) or nbio-std (net/http handshake, nbio poller)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := raiseFileLimit(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	return bench.ServeBroadcasterEngine(ctx, *engine, *redisURL, *addr, func(a string) { fmt.Printf("listening %s\n", a) })
}
