package redisconn_test

import (
	"testing"

	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestOpenSNI: every form of a rediss:// URL dialled at addresses that
// the servers' certificates do not name (here each holds the name
// redis.test alone, as a cluster whose nodes announce their addresses
// and share one certificate has it) verifies every server for the name
// its sni= gives: a single node, the plain URL of a node of a cluster
// (the probe and every master), go-redis's cluster URL, and the Sentinel
// form (the Sentinels and the master they name). Without it each is
// refused with a hint that names sni=, and with another name too. Until
// 7 Dec 2026 the URL could name no host: such servers could not be
// reached at their addresses at all.
func TestOpenSNI(t *testing.T) {
	ca := redistest.TrustedCA(t)
	named := func() redistest.Options { return redistest.Options{TLS: ca.TLSFilesFor(t, "no", "redis.test")} }
	single := redistest.MustStart(t, named())
	c := redistest.MustStartCluster(t, redistest.ClusterOptions{Replicas: -1, Node: named()})
	s := redistest.MustStartSentinel(t, redistest.SentinelOptions{Node: named()})
	for _, tt := range []struct {
		name    string
		url     string
		cluster bool
	}{
		{"single node", single.URL(), false},
		{"plain URL of a cluster node", "rediss://" + c.Nodes[0].Addr, true},
		{"cluster URL", c.URL(), true},
		{"Sentinel URL", s.URL(), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantOpenRefused(t, tt.url, "not for the host of the URL", "sni=NAME")
			wantOpenRefused(t, withQuery(tt.url, "sni=other.test"), "not for the host of the URL")

			writeEveryMaster(t, mustOpenForm(t, withQuery(tt.url, "sni=redis.test"), tt.cluster))
		})
	}
}

// TestOpenSNIRefused: an sni= that cannot work fails Check, before
// anything is dialled, saying why: on a URL without TLS, and empty.
func TestOpenSNIRefused(t *testing.T) {
	srv := redistest.MustStartTLS(t, redistest.TrustedCA(t))
	for _, tt := range []struct {
		name string
		url  string
		want []string
	}{
		{"without TLS", "redis://" + srv.Addr + "/0?sni=redis.test", []string{"sni=", "need a rediss:// URL"}},
		{"empty", srv.URL() + "?sni=", []string{"sni= is empty"}},
		{"cluster URL, empty", "rediss://" + srv.Addr + "?addr=" + srv.Addr + "&sni=", []string{"sni= is empty"}},
	} {
		t.Run(tt.name, func(t *testing.T) { wantRefusedAtOnce(t, tt.url, tt.want...) })
	}
}
