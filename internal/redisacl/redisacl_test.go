package redisacl_test

import (
	"errors"
	"testing"

	"github.com/codemojex/feed/internal/redisacl"
)

// The replies are those of Redis 7.0.15 and Valkey 8.0.1 (and Redis 7.2,
// whose words are Valkey's).
func TestGrant(t *testing.T) {
	tests := []struct{ reply, want string }{
		{"NOPERM this user has no permissions to run the 'xgroup|create' command", "+xgroup|create"},
		{"NOPERM User r has no permissions to run the 'xreadgroup' command", "+xreadgroup"},
		{"NOPERM User r has no permissions to run the 'PING' command", "+ping"},
		{"NOPERM this user has no permissions to access one of the keys used as arguments", "~codemojex:*"},
		{"NOPERM No permissions to access a key", "~codemojex:*"},
		{"NOPERM this user has no permissions to access one of the channels used as arguments", "&codemojex:*"},
		{"NOPERM No permissions to access a channel", "&codemojex:*"},
		{"ERR ACL failure in script: User r has no permissions to run the 'xclaim' command script: abc", "+xclaim"},
		{"ERR The user executing the script can't run this command or subcommand script: abc", ""},
		{"ERR The user executing the script can't access at least one of the keys mentioned in the command script: abc", "~codemojex:*"},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", ""},
	}
	for _, tt := range tests {
		if got := redisacl.Grant(errors.New(tt.reply)); got != tt.want {
			t.Errorf("Grant(%q) = %q, want %q", tt.reply, got, tt.want)
		}
	}
}
