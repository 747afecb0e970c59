package web

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"
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
func (s *Server) within(h http.HandlerFunc, dflt int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		limit := max(s.cfg.ResponseTimeout-time.Second, time.Second)
		q := r.URL.Query()
		v := q.Get("seconds")
		if v == "" {
			if time.Duration(dflt)*time.Second > limit {
				r = r.Clone(r.Context())
				q.Set("seconds", strconv.Itoa(int(limit/time.Second)))
				r.URL.RawQuery = q.Encode()
			}
			h(w, r)
			return
		}
		// A value that is no number is pprof's to refuse.
		if sec, err := strconv.ParseFloat(v, 64); err == nil && sec*float64(time.Second) > float64(limit) {
			http.Error(w, fmt.Sprintf("seconds: at most %d here: -response-timeout (%v) cuts a longer response off",
				int(limit/time.Second), s.cfg.ResponseTimeout), http.StatusBadRequest)
			return
		}
		h(w, r)
	}
}

// profileRoutes are the routes of net/http/pprof, each within the
// response deadline.
func (s *Server) profileRoutes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"/debug/pprof/":          pprof.Index,
		"/debug/pprof/profile":   s.within(pprof.Profile, profileSeconds),
		"/debug/pprof/trace":     s.within(pprof.Trace, 1),
		"/debug/pprof/symbol":    pprof.Symbol,
		"/debug/pprof/cmdline":   pprof.Cmdline,
		"/debug/pprof/{profile}": s.within(pprof.Index, 0), // ?seconds= asks a delta profile
	}
}
