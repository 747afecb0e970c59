package redisconn

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/redisacl"
)

// NoPerm reports whether err is the server's refusal of a command by its
// ACL (redisacl.Refused: NOPERM, or a script's refused redis.call). The
// fix is a grant to the URL's user (docs/operations.md, "A Redis with ACL
// users").
func NoPerm(err error) bool { return redisacl.Refused(err) }

// checkCredentials is the hint of an error about credentials the server
// refused at start.
const checkCredentials = "check the user and password in -redis or $REDIS_URL; docs/operations.md, \"Redis refuses the renderer\""

// badCredentials reports whether err is a server's refusal of the
// credentials a client logged in with: WRONGPASS (a wrong password, a
// user it has not, or one switched off) or NOAUTH (it wants a password
// and got none).
func badCredentials(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "WRONGPASS") || strings.HasPrefix(s, "NOAUTH")
}

// Logger is where the clients Open returns say that the server's ACL
// refused a command: go-redis's own logger interface.
type Logger interface {
	Printf(ctx context.Context, format string, v ...any)
}

// logger is the Logger of SetLogger, nil before.
var logger atomic.Pointer[Logger]

// SetLogger sends go-redis's own lines (redis.SetLogger) and the refusals
// of the server's ACL (aclHook) to l. One per process: the last call wins.
func SetLogger(l Logger) {
	redis.SetLogger(l)
	logger.Store(&l)
}

// aclHook says, through the Logger of SetLogger, which command the
// server's ACL refused and what to do: the caller's own error carries the
// server's words, which on Redis 7.0 do not name a script's refused
// command, nor say where the grants are listed. It changes no reply.
type aclHook struct{}

func (aclHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (aclHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		// The command's own error is set once the hooks have run: the
		// one they return is the one to look at.
		refused(ctx, cmd, err)
		return err
	}
}

func (aclHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			refused(ctx, c, c.Err())
		}
		return err
	}
}

// ACLRefusal is the start of the line aclHook logs: "redis: " ACLRefusal
// COMMAND ….
const ACLRefusal = "the server's ACL refuses"

// refused logs cmd when err, its error, is the server's ACL's refusal.
func refused(ctx context.Context, cmd redis.Cmder, err error) {
	if !NoPerm(err) {
		return
	}
	l := logger.Load()
	if l == nil {
		return
	}
	name := strings.ToUpper(cmd.FullName())
	what := name
	if !strings.HasPrefix(err.Error(), "NOPERM") {
		// Not the command itself: one its script ran.
		what = "a command of a script (" + name + "; ACL LOG on the server names it)"
	}
	(*l).Printf(ctx, "redis: "+ACLRefusal+" %s to this user: grant it (docs/operations.md, \"A Redis with ACL users\"): %v", what, err)
}
