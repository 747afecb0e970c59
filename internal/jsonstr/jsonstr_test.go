package jsonstr_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/codemojex/feed/internal/jsonstr"
)

// FuzzAppend holds every form byte for byte to encoding/json's.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "plain", `"quoted" \ back`, "<script>&amp;</script>", "tab\tnl\nnul\x00\b\f\r",
		"\u2028\u2029", "\xff\xfeinvalid", "🍎🍌‍👩", "\u202eevil", "\x7f", "\xed\xa0\x80surrogate"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		safe, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonstr.AppendHTMLSafe([]byte("x"), s); string(got) != "x"+string(safe) {
			t.Errorf("AppendHTMLSafe(%q)\n got %s\nwant x%s", s, got, safe)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if got := jsonstr.Append(nil, s); !bytes.Equal(got, want) {
			t.Errorf("Append(%q)\n got %s\nwant %s", s, got, want)
		}
		if got := jsonstr.AppendBytes([]byte("x"), []byte(s)); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Errorf("AppendBytes(%q)\n got %s\nwant x%s", s, got, want)
		}
	})
}
