package web

import (
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/codemojex/feed/internal/flagenv"
)

// profileSeconds is net/http/pprof's default duration of a CPU profile
// asked without ?seconds=.
const profileSeconds = 30

// within serves a net/http/pprof handler whose ?seconds= fits the write
// deadline every admin response has (Config.ResponseTimeout), leaving a
// second to write the result: pprof checks a duration only against
// http.Server.WriteTimeout, which this server leaves unset (it would end
// websockets). A CPU profile asked without ?seconds= (go tool pprof
// http://HOST/debug/pprof/profile) took pprof's 30 s against a 30 s
// deadline and was always cut off; it now takes the longest that fits, and
// a longer one asked for is refused with 400 saying why, not cut off
// (TestProfileWithinResponseTimeout).
//
// The value is read as pprof reads it (seconds): r.FormValue, so a POSTed
// form's before the query's, and a CPU profile's as a whole number. A value
// pprof does not take (0, a negative, 1.5, abc) has it run its default,
// dflt seconds, which is refused as well when it does not fit; until 6 Dec
// 2026 such a value passed on the query's reading and a CPU profile of 30 s
// was cut off (TestProfileSecondsAsPprofReadsThem).
func (s *Server) within(h http.HandlerFunc, dflt int, whole bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		limit := max(s.cfg.ResponseTimeout-time.Second, time.Second)
		v := r.FormValue("seconds")
		if v == "" {
			if time.Duration(dflt)*time.Second > limit {
				// Set where pprof reads it: the form FormValue parsed.
				r = r.Clone(r.Context())
				r.Form.Set("seconds", strconv.Itoa(int(limit/time.Second)))
				q := r.URL.Query()
				q.Set("seconds", strconv.Itoa(int(limit/time.Second)))
				r.URL.RawQuery = q.Encode()
			}
			h(w, r)
			return
		}
		sec, ok := seconds(v, whole)
		switch {
		case ok && sec*float64(time.Second) > float64(limit):
			http.Error(w, fmt.Sprintf("seconds: at most %d here: -response-timeout (%v) cuts a longer response off",
				int(limit/time.Second), s.cfg.ResponseTimeout), http.StatusBadRequest)
			return
		case !ok && time.Duration(dflt)*time.Second > limit:
			// Else pprof runs its default, or refuses the value itself.
			http.Error(w, fmt.Sprintf("seconds: want a whole number from 1 to %d here, where pprof takes %q as its %d s: "+
				"-response-timeout (%v) cuts a longer response off", int(limit/time.Second), v, dflt, s.cfg.ResponseTimeout),
				http.StatusBadRequest)
			return
		}
		h(w, r)
	}
}

// seconds reads a ?seconds= value as net/http/pprof does: a whole number
// (a CPU or a delta profile) or any number (a trace), above 0 to be taken.
func seconds(v string, whole bool) (float64, bool) {
	if whole {
		n, err := strconv.ParseInt(v, 10, 64)
		return float64(n), err == nil && n > 0
	}
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil && f > 0
}

// profileRoutes are the routes of net/http/pprof, each within the
// response deadline.
func (s *Server) profileRoutes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"/debug/pprof/":          pprof.Index,
		"/debug/pprof/profile":   s.within(pprof.Profile, profileSeconds, true),
		"/debug/pprof/trace":     s.within(pprof.Trace, 1, false),
		"/debug/pprof/symbol":    pprof.Symbol,
		"/debug/pprof/cmdline":   s.cmdline,
		"/debug/pprof/{profile}": s.within(pprof.Index, 0, true), // ?seconds= asks a delta profile
	}
}

// cmdline is pprof.Cmdline with the secrets a command line may hold
// written xxxxx: the value of every flag in SecretFlags (the admin token),
// and a Redis URL's password in any argument (flagenv.RedactArgs). The
// token that opens it opens /metrics too, which a scraper holds; the
// Redis password is more, write access to every stream
// (TestCmdlineHidesSecrets, TestCmdlineHidesSecretFlags).
func (s *Server) cmdline(w http.ResponseWriter, _ *http.Request) {
	args := flagenv.RedactArgs(os.Args, s.cfg.SecretFlags)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, strings.Join(args, "\x00"))
}
