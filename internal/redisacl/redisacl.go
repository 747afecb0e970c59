// Package redisacl tells the server's ACL refusal of a command apart from
// other errors, and the rule it asks for, in the words of the servers the
// feed runs on. It is shared by internal/redisconn, which says what to
// grant, and the feed, which waits a refusal out instead of blaming the
// stream; it depends on neither (docs/operations.md, "A Redis with ACL
// users").
package redisacl

import "strings"

// Refused reports whether err is the server's refusal of a command by its
// ACL: NOPERM, the reply to a command, which names it, and the error of a
// script whose redis.call the ACL refused: "ACL failure in script: …",
// naming it, on Valkey 8 (and Redis 7.2), and, on Redis 7.0, "The user
// executing the script can't run this command or subcommand" (or "can't
// access at least one of the keys"), which does not (ACL LOG does).
func Refused(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "NOPERM") || strings.Contains(s, "ACL failure in script") ||
		strings.Contains(s, "The user executing the script can't")
}

// Grant returns the rule that err, a refusal of the server's ACL
// (Refused), asks for, in the words of ACL SETUSER: "+xgroup|create" for
// a command the reply names, the feed's key or channel pattern
// ("~codemojex:*", "&codemojex:*") for a key or a channel, and "" when
// the reply names none (a script's refusal on Redis 7.0: ACL LOG names
// it). The rules in full are in docs/operations.md, "A Redis with ACL
// users".
func Grant(err error) string {
	if !Refused(err) {
		return ""
	}
	s := err.Error()
	// "… to run the 'xgroup|create' command" (Redis 7.0 says "this user
	// has no permissions", Valkey 8 "User r has no permissions"), and a
	// script's "ACL failure in script: … to run the 'xack' command …".
	if _, rest, ok := strings.Cut(s, "to run the '"); ok {
		if cmd, _, ok := strings.Cut(rest, "' command"); ok && cmd != "" {
			return "+" + strings.ToLower(cmd)
		}
	}
	switch {
	case strings.Contains(s, "key"):
		return "~codemojex:*"
	case strings.Contains(s, "channel"):
		return "&codemojex:*"
	}
	return ""
}
