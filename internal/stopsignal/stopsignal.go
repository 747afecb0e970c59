// Package stopsignal catches SIGINT and SIGTERM from its own package
// initialisation on, so that a binary stopped while its other packages
// still initialise stops as cleanly as one stopped later.
//
// signal.NotifyContext in main only catches a signal once main runs; until
// then the runtime takes the default action, and a process stopped in its
// first tens of milliseconds (the renderer's packages take 30 to 150 ms to
// initialise on a loaded host) died by the signal, exit status 143, where
// a stop a moment later exits 0. Go initialises, step by step, the first
// package by import path whose imports are initialised: this one imports
// only os, os/signal and syscall (and the context, errors and sync of
// NotifyContext), so it comes right after those few standard library
// packages, before any other of the module's or a third party's, and a
// main that imports it catches the signals from then on
// (TestTermDuringInit checks it is the first outside the standard library). What comes before this
// package's init, the runtime's own start and those few packages, is a
// window no Go code can close (docs/operations.md, "Stopping", has its
// measure).
//
// A binary imports it and calls NotifyContext once, where it would call
// signal.NotifyContext with os.Interrupt and syscall.SIGTERM.
package stopsignal

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// signals are the signals caught from init on: the ones an orchestrator
// (SIGTERM) and a terminal (SIGINT) stop a process with.
var signals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// caught holds a signal received before NotifyContext's goroutine takes
// it. One is enough, as for signal.NotifyContext: the first stops the
// process, and one sent meanwhile is dropped by package signal.
var caught = make(chan os.Signal, 1)

func init() { signal.Notify(caught, signals...) }

// NotifyContext returns a copy of parent that is cancelled when SIGINT or
// SIGTERM arrives, or has arrived since the package's init, or when stop
// is called, whichever comes first; as with signal.NotifyContext,
// context.Cause then says which signal. stop unregisters the signals: from
// then on they take their default action again, so that a second Ctrl-C
// kills at once. A binary calls it once, in main: the signal caught before
// goes to one context only.
func NotifyContext(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case sig := <-caught:
			cancel(errors.New(sig.String() + " signal received"))
		case <-ctx.Done():
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			cancel(context.Canceled)
			signal.Stop(caught)
		})
	}
}
