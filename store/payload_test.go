package store

import (
	"encoding/json"
	"testing"
)

// Internal test: encodePayload must stay byte-identical to encoding/json,
// since stores written before and after it are compared byte for byte.
func FuzzEncodePayload(f *testing.F) {
	for _, s := range []string{"", "plain", `"quoted" \ back`, "<script>&amp;</script>", "tab\tnl\nnul\x00",
		"\u2028\u2029", "\xff\xfeinvalid", "🍎🍌‍👩", "\u202eevil", "\x7f"} {
		f.Add("k", s)
		f.Add(s, "v")
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		m := map[string]string{k: v, "kind": "guess", "at": v + k, "zz" + k: "x"}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := encodePayload(m); got != string(want) {
			t.Errorf("encodePayload(%q)\n got %s\nwant %s", m, got, want)
		}
	})
}

func TestEncodePayloadEmpty(t *testing.T) {
	if got := encodePayload(nil); got != "{}" {
		t.Errorf("nil map: %s", got)
	}
}
