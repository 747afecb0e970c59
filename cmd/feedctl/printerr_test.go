package main

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// TestPrintErrOneLineEach: feedctl prints each error a command joins on a
// line of its own (a requeue's "would fail again" and "truncated" counts,
// a refused confirmation and the refusals), with its control characters
// escaped; an error that wraps several others with its own words is one
// line. The joined text was escaped whole: its newlines came out as a
// literal \n inside one line.
func TestPrintErrOneLineEach(t *testing.T) {
	a := errors.New("dead requeue: 12 of 15 dead letters would fail again")
	b := errors.New("dead requeue: 3 of 15 dead letters are truncated")
	for _, tt := range []struct {
		err  error
		want string
	}{
		{a, "feedctl: " + a.Error() + "\n"},
		{errors.Join(a, b), "feedctl: " + a.Error() + "\nfeedctl: " + b.Error() + "\n"},
		{errors.Join(errors.Join(a, b), errors.New("refused")), "feedctl: " + a.Error() + "\nfeedctl: " + b.Error() + "\nfeedctl: refused\n"},
		{errors.Join(errors.New("bad \x1b[31m\nline")), "feedctl: bad \\x1b[31m\\nline\n"},
		{fmt.Errorf("store: upsert batch: %w: %w", a, b), "feedctl: store: upsert batch: " + a.Error() + ": " + b.Error() + "\n"},
	} {
		var w bytes.Buffer
		printErr(&w, tt.err)
		if w.String() != tt.want {
			t.Errorf("printErr(%q):\n%s\nwant\n%s", tt.err, w.String(), tt.want)
		}
	}
}
