// Package redistest starts real redis-server (or valkey-server) processes
// for tests, each on a free port with its data in a temporary directory
// (internal/proc's Redis, with test helpers). It never touches a server it
// did not start. MustStartCluster starts a local Redis Cluster of masters
// with replicas, with helpers for failovers, killed masters and slot moves.
package redistest

import (
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/proc"
)

// Options configure a Server.
type Options = proc.RedisOptions

// Server is a redis-server process owned by a test.
type Server struct {
	*proc.Redis
}

// ServerEnv names the environment variable that chooses the server the
// tests start: "redis-server" or "valkey-server" (see proc.RedisServerEnv).
const ServerEnv = proc.RedisServerEnv

// Binary returns the path of the server binary the tests start (see
// ServerEnv), or an error that names the package to install.
func Binary() (string, error) { return proc.RedisBinary() }

// MustStart starts a server on a free port and stops it when the test
// ends. The port stays reserved for it until then (proc.Reserve): a test
// that kills its server and starts it again gets its port back.
func MustStart(tb testing.TB, opts ...Options) *Server {
	tb.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	r, err := proc.StartRedis(tb.TempDir(), o)
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{r}
	tb.Cleanup(s.Close)
	return s
}

// Client returns a client of the server, closed when the test ends.
func (s *Server) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	// As the binaries do: context deadlines bound every call, so a paused
	// server cannot hold a test beyond the deadlines it sets.
	opt := s.options(tb)
	opt.ContextTimeoutEnabled = true
	c := redis.NewClient(opt)
	tb.Cleanup(func() { c.Close() })
	return c
}

// options returns the options of a client of the server (with TLS for a
// TLS server), or fails tb.
func (s *Server) options(tb testing.TB) *redis.Options {
	tb.Helper()
	opt, err := s.ClientOptions()
	if err != nil {
		tb.Fatal(err)
	}
	return opt
}

// Start starts the server again on the same port and data directory.
func (s *Server) Start(tb testing.TB) {
	tb.Helper()
	if err := s.Redis.Start(); err != nil {
		tb.Fatal(err)
	}
}

// Kill stops the server with SIGKILL and waits for it to exit.
func (s *Server) Kill(tb testing.TB) {
	tb.Helper()
	s.Stop()
}

// Restart kills the server with SIGKILL and starts it on the same port and
// data: with AOF on, nothing acknowledged is lost; without it, everything is.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.Kill(tb)
	s.Start(tb)
}

// Pause stops the server process with SIGSTOP: connections stay open but
// nothing answers, as in a network partition.
func (s *Server) Pause(tb testing.TB) { tb.Helper(); s.signal(tb, syscall.SIGSTOP) }

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume(tb testing.TB) { tb.Helper(); s.signal(tb, syscall.SIGCONT) }

func (s *Server) signal(tb testing.TB, sig syscall.Signal) {
	tb.Helper()
	if err := s.Redis.Signal(sig); err != nil {
		tb.Fatal(err)
	}
}
