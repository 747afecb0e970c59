// Command feedbench measures the codemojex feed on this machine and prints
// one table: throughput against a raw XREADGROUP + XACK baseline, XADD to
// websocket latency, fan-out memory and delivery, and recovery times. It
// starts its own redis-server and renderer processes; with -write it also
// writes the table and the command that produced it to a Markdown file.
//
//	feedbench [-quick] [-only throughput,latency,fanout,recovery,cluster,idle,manygames] [-write docs/benchmarks.md]
//	feedbench clients -n 10000 -url http://127.0.0.1:PORT ...   (the fan-out's client process)
//	feedbench broadcaster -redis redis://127.0.0.1:PORT/0          (the bare broadcaster baseline)
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "clients":
		err = runClients(ctx, os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "broadcaster":
		err = runBroadcaster(ctx, os.Args[2:])
	default:
		err = runBench(ctx, os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "feedbench:", err)
		os.Exit(1)
	}
}
