// Package flagenv defines command-line flags whose defaults come from
// environment variables, so every binary's configuration lives in one place:
// flag > environment > built-in default.
package flagenv

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/codemojex/feed/internal/redisconn"
)

// DefaultRedisURL is the Redis URL every binary uses when neither -redis
// nor $REDIS_URL is given.
const DefaultRedisURL = "redis://127.0.0.1:6379/0"

// Set wraps a FlagSet and records environment parse errors, reported by
// Parse, so a bad $FEED_MIN_IDLE is as loud as a bad -min-idle, unless
// -min-idle itself was given: the flag overrides the variable, whatever
// the variable holds.
type Set struct {
	*flag.FlagSet
	errs    []envErr
	secrets []string // the flags defined with Secret
}

// envErr is a bad environment value, and the flag it was a default for.
type envErr struct {
	flag string
	err  error
}

// New returns a Set named name that returns errors instead of exiting.
func New(name string) *Set {
	return &Set{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError)}
}

// LineError is an error of the command line itself (a flag not defined, a
// value its type refuses, -h: flag.ErrHelp), which the flag package has
// already written to the Set's output, with the usage, when Parse returns
// it: a caller that prints its errors leaves this one out. A bad
// environment value is not one: nothing printed it.
type LineError struct{ Err error }

func (e *LineError) Error() string { return e.Err.Error() }

// Unwrap returns the flag package's error (flag.ErrHelp for -h).
func (e *LineError) Unwrap() error { return e.Err }

// Parse parses args and reports the first bad environment value, if any,
// of a flag args did not set. An error of args themselves is a *LineError.
func (s *Set) Parse(args []string) error {
	if err := s.FlagSet.Parse(args); err != nil {
		return &LineError{err}
	}
	given := map[string]bool{}
	s.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, e := range s.errs {
		if !given[e.flag] {
			return e.err
		}
	}
	return nil
}

// bad records v, $env's value, as no value of flag name's type.
func (s *Set) bad(name, env string, err error) {
	s.errs = append(s.errs, envErr{name, fmt.Errorf("$%s: %w", env, err)})
}

func (s *Set) env(env string) (string, bool) {
	v, ok := os.LookupEnv(env)
	return v, ok && v != ""
}

func usage(u, env string) string { return fmt.Sprintf("%s (env %s)", u, env) }

// String defines a string flag with an environment fallback.
func (s *Set) String(p *string, name, env, def, u string) {
	if v, ok := s.env(env); ok {
		def = v
	}
	s.StringVar(p, name, def, usage(u, env))
}

// Duration defines a duration flag with an environment fallback.
func (s *Set) Duration(p *time.Duration, name, env string, def time.Duration, u string) {
	if v, ok := s.env(env); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			s.bad(name, env, err)
		} else {
			def = d
		}
	}
	s.DurationVar(p, name, def, usage(u, env))
}

// Int defines an int flag with an environment fallback.
func (s *Set) Int(p *int, name, env string, def int, u string) {
	if v, ok := s.env(env); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			s.bad(name, env, err)
		} else {
			def = n
		}
	}
	s.IntVar(p, name, def, usage(u, env))
}

// Int64 defines an int64 flag with an environment fallback.
func (s *Set) Int64(p *int64, name, env string, def int64, u string) {
	if v, ok := s.env(env); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			s.bad(name, env, err)
		} else {
			def = n
		}
	}
	s.Int64Var(p, name, def, usage(u, env))
}

// Bool defines a bool flag with an environment fallback.
func (s *Set) Bool(p *bool, name, env string, def bool, u string) {
	if v, ok := s.env(env); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			s.bad(name, env, err)
		} else {
			def = b
		}
	}
	s.BoolVar(p, name, def, usage(u, env))
}

// Float64 defines a float64 flag with an environment fallback.
func (s *Set) Float64(p *float64, name, env string, def float64, u string) {
	if v, ok := s.env(env); ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			s.bad(name, env, err)
		} else {
			def = f
		}
	}
	s.Float64Var(p, name, def, usage(u, env))
}

// Secret defines a string flag with an environment fallback whose value
// the usage does not show: the docs say to keep a secret in the
// environment because process lists show flags, and -h printed it as the
// flag's default.
func (s *Set) Secret(p *string, name, env, u string) {
	s.String(p, name, env, "", u)
	s.Lookup(name).DefValue = ""
	s.secrets = append(s.secrets, name)
}

// Secrets returns the names of the flags defined with Secret, for
// RedactArgs.
func (s *Set) Secrets() []string { return append([]string(nil), s.secrets...) }

// RedactArgs returns a copy of a command line, args, with the value of
// every flag named in secret written xxxxx in whichever form the flag
// package takes it (-name=value, --name=value, -name value, --name value),
// and a Redis URL's password in any other argument (redisconn.Redact).
// An argument after a secret flag's bare name is its value wherever it
// stands: a command line past its flags hides one more argument, never
// one less. Hiding the admin token by its value, as /debug/pprof/cmdline
// did, missed an earlier -admin-token that a later one overrode and wrote
// xxxxx into any argument that happened to contain the token.
func RedactArgs(args, secret []string) []string {
	// isSecret reports whether a names a secret flag, and whether its
	// value comes with it (-name=value).
	isSecret := func(a string) (ok, withValue bool) {
		if len(a) < 2 || a[0] != '-' {
			return false, false
		}
		name := strings.TrimPrefix(a[1:], "-")
		name, _, withValue = strings.Cut(name, "=")
		return slices.Contains(secret, name), withValue
	}
	out := make([]string, len(args))
	for i := 0; i < len(args); i++ {
		ok, value := isSecret(args[i])
		switch {
		case !ok:
			out[i] = redisconn.Redact(args[i])
		case value:
			out[i] = args[i][:strings.Index(args[i], "=")+1] + "xxxxx"
		default:
			out[i] = args[i]
			if i+1 < len(args) {
				i++
				out[i] = "xxxxx"
			}
		}
	}
	return out
}

// Redis defines the -redis flag every binary shares: $REDIS_URL, else
// DefaultRedisURL. The usage shows $REDIS_URL with its password as
// "xxxxx".
func (s *Set) Redis(p *string) {
	s.String(p, "redis", "REDIS_URL", DefaultRedisURL, "Redis or Valkey URL: redis://HOST:PORT[/DB]; a cluster, redis://H1:P1?addr=H2:P2; Sentinel, redis://S1:P1?master_name=NAME&addr=S2:P2; TLS, rediss://, a private CA ?cacert=FILE or ?cacertdir=DIR, a client certificate ?cert=FILE&key=FILE, servers whose certificates name another host ?sni=NAME")
	f := s.Lookup("redis")
	f.DefValue = redisconn.Redact(f.DefValue)
}
