package flagenv_test

import (
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
