package web_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/codemojex/feed/web"
)

// jsonFrame is what encoding/json makes of a frame with HTML escaping off:
// the yardstick of the frame encoder.
func jsonFrame(t string, seq int64, id, html string, n int64) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		T    string `json:"t"`
		Seq  int64  `json:"seq,omitempty"`
		ID   string `json:"id,omitempty"`
		HTML string `json:"html,omitempty"`
		N    int64  `json:"n,omitempty"`
	}{t, seq, id, html, n})
	return bytes.TrimRight(b.Bytes(), "\n")
}

var frameStrings = []string{
	"",
	"plain",
	`<li id="evt_01" class="line">a & b <b>"quoted"</b> back\slash</li>`,
	"ctl \x00\x01\x07\x08\x0c\x1f\x7f \t\r\n end",
	"emoji 🦊🍎 ünïcödé",
	"js terminators \u2028 and \u2029",
	"bad utf-8 \xff\xfe \xc3 \xe2\x82 end",
	"</script><script>alert(1)</script>",
}

func TestEncodeFrameMatchesEncodingJSON(t *testing.T) {
	for _, s := range frameStrings {
		for _, seq := range []int64{0, 1, 1 << 40} {
			want := jsonFrame("line", seq, s, s, seq/2)
			if got := web.EncodeFrame("line", seq, s, s, seq/2); !bytes.Equal(got, want) {
				t.Fatalf("encode %q seq %d:\ngot  %s\nwant %s", s, seq, got, want)
			}
			if got := web.EncodeFrameHTML("line", seq, s, []byte(s), seq/2); !bytes.Equal(got, want) {
				t.Fatalf("encode from a buffer %q seq %d:\ngot  %s\nwant %s", s, seq, got, want)
			}
		}
	}
}

func FuzzEncodeFrame(f *testing.F) {
	for _, s := range frameStrings {
		f.Add(s, int64(7))
	}
	f.Fuzz(func(t *testing.T, s string, seq int64) {
		want := jsonFrame("state", seq, s, s, seq)
		if got := web.EncodeFrame("state", seq, s, s, seq); !bytes.Equal(got, want) {
			t.Fatalf("encode %q:\ngot  %s\nwant %s", s, got, want)
		}
		if got := web.EncodeFrameHTML("state", seq, s, []byte(s), seq); !bytes.Equal(got, want) {
			t.Fatalf("encode from a buffer %q:\ngot  %s\nwant %s", s, got, want)
		}
	})
}
