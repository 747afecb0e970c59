package untrusted_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/codemojex/feed/internal/untrusted"
)

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"🍎🍌 ok", "🍎🍌 ok"},
		{"\x1b]0;pwned\a", `\x1b]0;pwned\a`},
		{"two\nlines\r", `two\nlines\r`},
		{"rtl\u202eevil", `rtl\u202eevil`},
		{"bad\xffbyte", `bad\xffbyte`},
		{`back\slash`, `back\\slash`},
		{"c1\u009bcsi", `c1\u009bcsi`},
	}
	for _, tt := range tests {
		if got := untrusted.Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTextBounded(t *testing.T) {
	long := strings.Repeat("🍎", 1000) + "\x1b"
	got := untrusted.Text(long)
	if len(got) > untrusted.MaxLog+40 {
		t.Fatalf("Text kept %d bytes, want about %d", len(got), untrusted.MaxLog)
	}
	if strings.ContainsRune(got, 0x1b) || !strings.Contains(got, "more bytes") {
		t.Fatalf("Text(long) = %q", got)
	}
}

// TestLogLineHasNoRawControl: a hostile value logged through Attr and Err,
// with either slog handler, leaves no ESC, newline or over-long value in
// the output.
func TestLogLineHasNoRawControl(t *testing.T) {
	hostile := "\x1b[2J\x1b]0;owned\a\nlevel=ERROR msg=forged " + strings.Repeat("x", 10000)
	for _, h := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var b bytes.Buffer
		slog.New(h(&b)).Info("x", untrusted.Attr("kind", hostile), untrusted.Err(errors.New(hostile)))
		out := b.String()
		if strings.Count(out, "\n") != 1 || strings.ContainsRune(out, 0x1b) || strings.ContainsRune(out, '\a') {
			t.Fatalf("raw control characters in the log line: %q", out)
		}
		if len(out) > 3*untrusted.MaxLog {
			t.Fatalf("log line of %d bytes for a 10 KB value", len(out))
		}
	}
}
