package feed

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// serverError reports whether err is a reply from the server (WRONGTYPE,
// NOGROUP, ...) as opposed to a connection problem. Replies that mean "the
// server cannot answer now" count as connection problems.
func serverError(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) || errors.Is(err, redis.Nil) {
		return false
	}
	switch errCode(err) {
	case "LOADING", "BUSY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "READONLY":
		return false
	}
	return true
}

// errCode returns the first word of a server error ("WRONGTYPE").
func errCode(err error) string {
	var re redis.Error
	if !errors.As(err, &re) {
		return "ERR"
	}
	code, _, _ := strings.Cut(re.Error(), " ")
	if code == "" || strings.ToUpper(code) != code {
		return "ERR"
	}
	return code
}

func isNoGroup(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOGROUP")
}
