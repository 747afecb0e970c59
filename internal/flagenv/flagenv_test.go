package flagenv_test

import (
	"errors"
	"flag"
	"io"
	"slices"
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

// TestUsageHidesSecrets: the usage (-h) shows the default each flag has,
// the environment's value among them, but not a secret: the admin token
// kept in $FEED_ADMIN_TOKEN, or the password of $REDIS_URL, which the docs
// say to keep in the environment because process lists show flags. Both
// were printed as "(default …)". The flags still take the values.
func TestUsageHidesSecrets(t *testing.T) {
	for _, tt := range []struct {
		name, env, value string
		define           func(s *flagenv.Set, p *string)
		want             string // shown in the usage instead
	}{
		{"token", "FLAGENV_TEST_TOKEN", "s3cret-token", func(s *flagenv.Set, p *string) {
			s.Secret(p, "token", "FLAGENV_TEST_TOKEN", "admin token")
		}, "(env FLAGENV_TEST_TOKEN)\n"},
		{"redis password", "REDIS_URL", "redis://user:s3cret-pw@10.0.0.1:6380/2", func(s *flagenv.Set, p *string) { s.Redis(p) }, `"redis://user:xxxxx@10.0.0.1:6380/2"`},
		{"redis password alone", "REDIS_URL", "redis://:s3cret-pw@10.0.0.1:6380/2", func(s *flagenv.Set, p *string) { s.Redis(p) }, `"redis://:xxxxx@10.0.0.1:6380/2"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(tt.env, tt.value)
			s := flagenv.New("test")
			var out strings.Builder
			s.SetOutput(&out)
			var v string
			tt.define(s, &v)
			if err := s.Parse(nil); err != nil {
				t.Fatal(err)
			}
			s.PrintDefaults()
			if strings.Contains(out.String(), "s3cret") {
				t.Errorf("usage shows the secret:\n%s", out.String())
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("usage lacks %q:\n%s", tt.want, out.String())
			}
			if v != tt.value {
				t.Errorf("value = %q, want $%s's %q", v, tt.env, tt.value)
			}
		})
	}
}

// TestRedactArgs: RedactArgs hides the value of a flag named secret in
// every form the flag package takes (each one's parse is checked here), a
// repeated one too, and a Redis URL's password in any other argument; what
// is neither is left as it is, the secret's text in another flag's value
// too. Secrets names the flags defined with Secret.
func TestRedactArgs(t *testing.T) {
	define := func() (*flagenv.Set, *string) {
		s := flagenv.New("test")
		s.SetOutput(io.Discard)
		var tok, url, name string
		s.Secret(&tok, "token", "FLAGENV_TEST_TOKEN", "")
		s.Redis(&url)
		s.String(&name, "name", "FLAGENV_TEST_NAME", "", "")
		return s, &tok
	}
	s, _ := define()
	if got := s.Secrets(); len(got) != 1 || got[0] != "token" {
		t.Fatalf("Secrets() = %q, want [token]", got)
	}
	for _, tc := range []struct {
		args, want []string
		token      string // the token the flag package takes from args; "" for none
	}{
		{[]string{"-token=a"}, []string{"-token=xxxxx"}, "a"},
		{[]string{"--token=a"}, []string{"--token=xxxxx"}, "a"},
		{[]string{"-token", "a"}, []string{"-token", "xxxxx"}, "a"},
		{[]string{"--token", "a"}, []string{"--token", "xxxxx"}, "a"},
		{[]string{"-token=a=b"}, []string{"-token=xxxxx"}, "a=b"},
		{[]string{"-token", "-name"}, []string{"-token", "xxxxx"}, "-name"},
		{[]string{"-token=old", "-token", "new", "-name", "new"}, []string{"-token=xxxxx", "-token", "xxxxx", "-name", "new"}, "new"},
		{[]string{"-redis=redis://u:pw@h/0", "-redis", "redis://:pw@h/0"}, []string{"-redis=redis://u:xxxxx@h/0", "-redis", "redis://:xxxxx@h/0"}, ""},
		{[]string{"-name", "a", "x", "-token", "a"}, []string{"-name", "a", "x", "-token", "xxxxx"}, ""}, // past the flags: hidden all the same
		{[]string{"-token"}, []string{"-token"}, ""},
		{[]string{"-tokenx=a", "---token=a", "-", "--", "token"}, []string{"-tokenx=a", "---token=a", "-", "--", "token"}, ""},
	} {
		got := flagenv.RedactArgs(tc.args, s.Secrets())
		if !slices.Equal(got, tc.want) {
			t.Errorf("RedactArgs(%q) = %q, want %q", tc.args, got, tc.want)
		}
		if tc.token != "" {
			p, tok := define()
			if err := p.Parse(tc.args); err != nil || *tok != tc.token {
				t.Errorf("the flag package on %q: %v, token %q; want %q", tc.args, err, *tok, tc.token)
			}
		}
	}
}
