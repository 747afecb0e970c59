package proc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisOptions configure a Redis.
type RedisOptions struct {
	// AOF turns on the append-only file (appendfsync always), so a SIGKILL
	// loses nothing that was acknowledged.
	AOF bool
	// MaxClients raises redis-server's client limit (its default is
	// 10,000), for benchmarks with many connections.
	MaxClients int
	// Cluster starts the server as a Redis Cluster node; its cluster bus
	// listens on Port+10000.
	Cluster bool
	// NodeTimeout is a cluster node's cluster-node-timeout: how long a node
	// may not answer before its replica takes over (default 2s).
	NodeTimeout time.Duration
	// TLS, when set, makes the server speak TLS only: its port is a
	// --tls-port and it has no plain-text one (--port 0), as a managed
	// Redis has. A cluster node also speaks TLS on its bus and to its
	// master (--tls-cluster, --tls-replication), so the cluster announces
	// its TLS ports.
	TLS *TLSFiles
	// ReplicaOf starts the server as a replica of the master at host:port
	// (--replicaof).
	ReplicaOf string
	// Sentinel, when set, starts the server as a Redis Sentinel
	// (redis-server FILE --sentinel) with this text as its configuration
	// file, sentinel.conf in its directory. The file is written only when
	// it is not there yet: a Sentinel rewrites it with what it learns (the
	// current master, the other Sentinels, its epoch), and one started
	// again reads what it wrote, as in production.
	Sentinel string
	// Args are more arguments of redis-server, after this package's own:
	// its ACL users (--user NAME …, one a user), --masteruser and
	// --masterauth for a master whose default user is off.
	Args []string
	// User and Password are what this package's clients log in as
	// (ClientOptions, the wait for the server at Start), for a server
	// whose default user is off or has a password (Args, or Sentinel's
	// text); both "" for the default user without one.
	User, Password string
}

// TLSFiles are the PEM files of a TLS server (RedisOptions.TLS).
type TLSFiles struct {
	// CertFile and KeyFile are the server's certificate and key. The
	// certificate is also the client certificate of the server's own
	// connections (a cluster bus, a replica's link) and of the clients
	// this package makes (ClientTLS, redis-cli): it must allow client as
	// well as server authentication.
	CertFile, KeyFile string
	// CAFile is the CA that the server trusts for client certificates and
	// that this package's clients trust for the server's.
	CAFile string
	// AuthClients is redis-server's --tls-auth-clients: "no" (the
	// default here), "optional" or "yes" (mutual TLS).
	AuthClients string
}

// ClientTLS returns the TLS configuration of a client of a server started
// with t: it trusts CAFile and presents CertFile.
func (t *TLSFiles) ClientTLS() (*tls.Config, error) {
	pem, err := os.ReadFile(t.CAFile)
	if err != nil {
		return nil, fmt.Errorf("proc: tls: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("proc: tls: no certificate in %s", t.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("proc: tls: %w", err)
	}
	// The server's certificate is this one: it is verified for the first
	// name it holds, which a test may have chosen unlike the address
	// dialled (a certificate for another host).
	name := ""
	if l := cert.Leaf; l != nil && len(l.IPAddresses) > 0 {
		name = l.IPAddresses[0].String()
	} else if l != nil && len(l.DNSNames) > 0 {
		name = l.DNSNames[0]
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: name, MinVersion: tls.VersionTLS12}, nil
}

// args returns redis-server's arguments for t on port.
func (t *TLSFiles) args(port int, cluster bool) []string {
	auth := t.AuthClients
	if auth == "" {
		auth = "no"
	}
	a := []string{
		"--port", "0",
		"--tls-port", strconv.Itoa(port),
		"--tls-cert-file", t.CertFile,
		"--tls-key-file", t.KeyFile,
		"--tls-ca-cert-file", t.CAFile,
		"--tls-auth-clients", auth,
		// With no plain-text port, a replica's link to its master and a
		// Sentinel's links to the master and replicas must be TLS too.
		"--tls-replication", "yes",
	}
	if cluster {
		a = append(a, "--tls-cluster", "yes")
	}
	return a
}

// cliArgs returns redis-cli's arguments to reach a server started with t.
func (t *TLSFiles) cliArgs() []string {
	if t == nil {
		return nil
	}
	return []string{"--tls", "--cacert", t.CAFile, "--cert", t.CertFile, "--key", t.KeyFile}
}

// Redis is a redis-server (or valkey-server) process on a free loopback
// port with its data in a directory of its own. It never touches a server
// it did not start.
type Redis struct {
	Addr string // host:port
	Port int
	Dir  string // data directory, kept across restarts

	bin  string
	opts RedisOptions

	mu      sync.Mutex
	proc    *Process
	release func() // the port's reservation (Reserve), if it has one
}

// RedisServerEnv names the environment variable that chooses the server
// that tests and benchmarks start: "redis-server" or "valkey-server" (a
// name on PATH or a path). Unset, redis-server is taken, else
// valkey-server. CI runs the suite once with each.
const RedisServerEnv = "CODEMOJEX_REDIS_SERVER"

// RedisBinary returns the path of the server binary to start (see
// RedisServerEnv), or an error that names the package to install.
func RedisBinary() (string, error) {
	if want := os.Getenv(RedisServerEnv); want != "" {
		p, err := exec.LookPath(want)
		if err != nil {
			return "", fmt.Errorf("proc: $%s=%s: %w (apt-get install -y redis-server, or valkey-server from bookworm-backports)", RedisServerEnv, want, err)
		}
		return p, nil
	}
	for _, name := range []string{"redis-server", "valkey-server"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("proc: neither redis-server nor valkey-server is on PATH: install Debian's package (apt-get install -y redis-server)")
}

// RedisCLI returns the path of the command-line client that goes with the
// server binary bin: valkey-cli for valkey-server, redis-cli for
// redis-server, else whichever of the two is installed.
func RedisCLI(bin string) (string, error) {
	names := []string{"redis-cli", "valkey-cli"}
	if strings.Contains(filepath.Base(bin), "valkey") {
		names = []string{"valkey-cli", "redis-cli"}
	}
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("proc: neither redis-cli nor valkey-cli is on PATH (apt-get install -y redis-tools)")
}

// StartRedisOn starts the server bin on port with its data under dir.
func StartRedisOn(bin, dir string, port int, opts RedisOptions) (*Redis, error) {
	s := &Redis{bin: bin, Dir: dir, opts: opts, Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port)}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// StartRedis starts a server on a free port with its data under dir. The
// port stays reserved for it (Reserve) across Stop and Start, until Close.
func StartRedis(dir string, opts RedisOptions) (*Redis, error) {
	bin, err := RedisBinary()
	if err != nil {
		return nil, err
	}
	return startReserved(bin, dir, opts)
}

// startReserved starts bin on a reserved free port (with its bus port for
// a cluster node), trying other ports while a process that does not
// reserve takes the one probed before the server binds it.
func startReserved(bin, dir string, opts RedisOptions) (*Redis, error) {
	var lastErr error
	for range 5 {
		port, release, err := reserveFree(opts.Cluster)
		if err != nil {
			return nil, err
		}
		s, err := StartRedisOn(bin, dir, port, opts)
		if err == nil {
			s.release = release
			return s, nil
		}
		release()
		lastErr = err
	}
	return nil, lastErr
}

// Pid returns the running server's process id (0 when it is not running).
func (s *Redis) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.Pid()
}

// Host returns the server's host.
func (s *Redis) Host() string { return "127.0.0.1" }

// URL returns the server's redis:// URL, rediss:// for a TLS server.
func (s *Redis) URL() string {
	if s.opts.TLS != nil {
		return "rediss://" + s.Addr + "/0"
	}
	return "redis://" + s.Addr + "/0"
}

// TLS returns the server's TLS files, nil for a plain-text server.
func (s *Redis) TLS() *TLSFiles { return s.opts.TLS }

// ClientOptions returns the options of a client of the server: its
// address, the user of RedisOptions.User and Password, and for a TLS
// server the TLS configuration of ClientTLS.
func (s *Redis) ClientOptions() (*redis.Options, error) {
	o := &redis.Options{Addr: s.Addr, Username: s.opts.User, Password: s.opts.Password}
	if s.opts.TLS != nil {
		c, err := s.opts.TLS.ClientTLS()
		if err != nil {
			return nil, err
		}
		o.TLSConfig = c
	}
	return o, nil
}

// Signal sends sig to the running server.
func (s *Redis) Signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return fmt.Errorf("proc: redis on %s is not running", s.Addr)
	}
	if err := s.proc.Signal(sig); err != nil {
		return fmt.Errorf("proc: redis on %s: signal %v: %w", s.Addr, sig, err)
	}
	return nil
}

// Start starts the server (again, after Stop) on its port and data
// directory, and waits until it answers PING.
func (s *Redis) Start() error {
	var args []string
	if s.opts.Sentinel != "" {
		conf, err := sentinelConf(s.Dir, s.opts.Sentinel)
		if err != nil {
			return err
		}
		// The file first, as redis-server wants it; the options below
		// override it.
		args = append(args, conf, "--sentinel")
	}
	if s.opts.TLS != nil {
		args = append(args, s.opts.TLS.args(s.Port, s.opts.Cluster)...)
	} else {
		args = append(args, "--port", strconv.Itoa(s.Port))
	}
	args = append(args,
		"--bind", "127.0.0.1",
		"--dir", s.Dir,
		"--save", "",
		"--daemonize", "no",
		"--logfile", filepath.Join(s.Dir, "redis.log"),
		"--protected-mode", "no",
	)
	if s.opts.ReplicaOf != "" {
		host, port, err := net.SplitHostPort(s.opts.ReplicaOf)
		if err != nil {
			return fmt.Errorf("proc: replica of %q: %w", s.opts.ReplicaOf, err)
		}
		args = append(args, "--replicaof", host, port)
	}
	if s.opts.MaxClients > 0 {
		args = append(args, "--maxclients", strconv.Itoa(s.opts.MaxClients))
	}
	if s.opts.Cluster {
		timeout := s.opts.NodeTimeout
		if timeout <= 0 {
			timeout = 2 * time.Second
		}
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", // in --dir
			"--cluster-node-timeout", strconv.FormatInt(timeout.Milliseconds(), 10),
			// A replica takes over however long it was cut off: tests
			// kill masters at any moment.
			"--cluster-replica-validity-factor", "0",
		)
	}
	switch {
	case s.opts.Sentinel != "":
		// A Sentinel keeps no data: it refuses persistence options.
	case s.opts.AOF:
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	default:
		args = append(args, "--appendonly", "no")
	}
	args = append(args, s.opts.Args...)
	opt, err := s.ClientOptions()
	if err != nil {
		return err
	}
	opt.MaxRetries = -1
	p, err := Start(exec.Command(s.bin, args...))
	if err != nil {
		return err
	}
	c := redis.NewClient(opt)
	defer c.Close()
	_, err = Poll(context.Background(), 10*time.Second, "redis-server on port "+strconv.Itoa(s.Port)+" to answer", func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		// The server that answers must be this process: another one (a
		// test's next door) may have taken the port between its probe
		// and our bind, and ours then exits while it answers.
		if pid, err := serverPid(ctx, c); err == nil && pid == p.Pid() {
			return true, nil
		}
		if p.Exited() {
			log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			return false, fmt.Errorf("proc: %s exited on port %d: %v\n%s", s.bin, s.Port, p.Err(), tail(log))
		}
		return false, nil
	})
	if err != nil {
		p.Kill()
		return err
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	return nil
}

// sentinelConf writes text to dir/sentinel.conf unless the file is
// there, and returns its path.
func sentinelConf(dir, text string) (string, error) {
	path := filepath.Join(dir, "sentinel.conf")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return path, nil
	}
	if err != nil {
		return "", fmt.Errorf("proc: sentinel: %w", err)
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("proc: sentinel: %w", err)
	}
	return path, nil
}

// serverPid returns the process id of the server c talks to (INFO
// server's process_id).
func serverPid(ctx context.Context, c *redis.Client) (int, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("proc: INFO server has no process_id")
}

// Stop kills the server and waits for it to exit; the data and the port's
// reservation stay, for Start.
func (s *Redis) Stop() {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p != nil {
		p.Kill()
	}
}

// Close stops the server and releases its port's reservation: Start
// after Close may find the port taken.
func (s *Redis) Close() {
	s.Stop()
	s.mu.Lock()
	release := s.release
	s.release = nil
	s.mu.Unlock()
	if release != nil {
		release()
	}
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
