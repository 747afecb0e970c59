package flagenv_test

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/flagenv"
)

// TestBadEnvOverriddenByFlag: a bad environment value is refused unless its
// flag is given, which overrides it (flag > environment > default). A
// bad $FEED_MIN_IDLE stopped a renderer started with -min-idle 5s.
func TestBadEnvOverriddenByFlag(t *testing.T) {
	for _, c := range []struct {
		kind, flagArg string
		define        func(s *flagenv.Set)
	}{
		{"duration", "-x=5s", func(s *flagenv.Set) { var v time.Duration; s.Duration(&v, "x", "FLAGENV_TEST_X", time.Second, "") }},
		{"int", "-x=5", func(s *flagenv.Set) { var v int; s.Int(&v, "x", "FLAGENV_TEST_X", 1, "") }},
		{"int64", "-x=5", func(s *flagenv.Set) { var v int64; s.Int64(&v, "x", "FLAGENV_TEST_X", 1, "") }},
		{"bool", "-x=true", func(s *flagenv.Set) { var v bool; s.Bool(&v, "x", "FLAGENV_TEST_X", false, "") }},
		{"float64", "-x=0.5", func(s *flagenv.Set) { var v float64; s.Float64(&v, "x", "FLAGENV_TEST_X", 1, "") }},
	} {
		t.Run(c.kind, func(t *testing.T) {
			t.Setenv("FLAGENV_TEST_X", "bogus")
			s := flagenv.New("test")
			c.define(s)
			if err := s.Parse(nil); err == nil || !strings.Contains(err.Error(), "$FLAGENV_TEST_X") {
				t.Errorf("no flag: Parse = %v, want the bad $FLAGENV_TEST_X refused", err)
			}
			s = flagenv.New("test")
			c.define(s)
			if err := s.Parse([]string{c.flagArg}); err != nil {
				t.Errorf("%s: Parse = %v, want the flag to override the bad variable", c.flagArg, err)
			}
		})
	}
}

// TestLineError: an error of the command line is a *LineError (the flag
// package wrote it), -h's flag.ErrHelp among them; a bad environment value
// is not (nothing wrote it), so a caller that prints its errors prints
// that one.
func TestLineError(t *testing.T) {
	t.Setenv("FLAGENV_TEST_LINE", "abc")
	for _, tt := range []struct {
		name string
		args []string
		line bool
		help bool
	}{
		{"unknown flag", []string{"-nope"}, true, false},
		{"bad value", []string{"-d", "abc"}, true, false},
		{"help", []string{"-h"}, true, true},
		{"bad variable", nil, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := flagenv.New("test")
			s.SetOutput(io.Discard)
			var d time.Duration
			s.Duration(&d, "d", "FLAGENV_TEST_LINE", time.Second, "")
			err := s.Parse(tt.args)
			var le *flagenv.LineError
			if err == nil || errors.As(err, &le) != tt.line || errors.Is(err, flag.ErrHelp) != tt.help {
				t.Errorf("Parse(%q) = %v (%T), want a LineError %v, flag.ErrHelp %v", tt.args, err, err, tt.line, tt.help)
			}
		})
	}
}
