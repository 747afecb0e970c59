package redisconn

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// Redact returns rawURL with the password of its user information, if it
// has one, replaced by "xxxxx", as url.URL.Redacted does, also for a URL
// that url.Parse refuses: an error or a usage that quotes a -redis ends
// up in logs, where $REDIS_URL's password must not. That holds for a value
// that lost its "redis://" ("u:pass@host:6379", "redis:/u:pass@host"),
// whose user information runs up to its first ':', and for a password
// with a '/' (base64's) that was not escaped: the user information is what
// comes before the last '@' ahead of any '?' or '#'. Until 6 Dec 2026
// only a "scheme://" URL whose password has no '/' was redacted.
func Redact(rawURL string) string {
	if prefix, user, _, rest, ok := splitPassword(rawURL); ok {
		rawURL = prefix + user + ":xxxxx" + rest
	}
	return redactQuery(rawURL)
}

// splitPassword cuts rawURL around the password of its user information:
// rawURL is prefix + user + ":" + pass + rest, rest starting at the '@'.
// ok is false when rawURL has no password.
func splitPassword(rawURL string) (prefix, user, pass, rest string, ok bool) {
	body := rawURL
	if scheme, r, found := strings.Cut(rawURL, "://"); found {
		prefix, body = scheme+"://", r
	}
	auth := body
	if i := strings.IndexAny(body, "?#"); i >= 0 {
		auth = body[:i]
	}
	at := strings.LastIndex(auth, "@")
	if at < 0 {
		return "", "", "", "", false
	}
	user, pass, ok = strings.Cut(auth[:at], ":")
	if !ok {
		return "", "", "", "", false
	}
	return prefix, user, pass, body[at:], true
}

// redactErr hides the password of the URL that a *url.Error quotes (from
// url.Parse, or go-redis's parsers, which return its errors), and a piece
// of it that the error's own words quote: url.Parse ends the host at a
// '/', so "redis://:ab/cd@h" is refused with `invalid port ":ab" after
// host`.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		passes := queryPasswords(ue.URL)
		if _, _, pass, _, ok := splitPassword(ue.URL); ok && pass != "" {
			passes = append(passes, pass)
		}
		for _, pass := range passes {
			if ue.Err != nil {
				ue.Err = redactQuotes(ue.Err, pass)
			}
		}
		ue.URL = Redact(ue.URL)
	}
	return err
}

// redactQuotes returns err with every quoted string of its message that is
// a piece of pass (or holds it) written "xxxxx"; err itself when there is
// none.
func redactQuotes(err error, pass string) error {
	msg := err.Error()
	var b strings.Builder
	changed := false
	for i := 0; i < len(msg); {
		if msg[i] == '"' {
			if q, qerr := strconv.QuotedPrefix(msg[i:]); qerr == nil {
				s, _ := strconv.Unquote(q)
				if s = strings.TrimLeft(s, ":@"); s != "" && (strings.Contains(pass, s) || strings.Contains(s, pass)) {
					b.WriteString(`"xxxxx"`)
					changed = true
				} else {
					b.WriteString(q)
				}
				i += len(q)
				continue
			}
		}
		b.WriteByte(msg[i])
		i++
	}
	if !changed {
		return err
	}
	return errors.New(b.String())
}
