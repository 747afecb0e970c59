package nbiocheck_test

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/codemojex/feed/internal/nbiocheck"
)

func frame(b0 byte, payload string) []byte {
	n := len(payload)
	var h []byte
	switch {
	case n < 126:
		h = []byte{b0, byte(n)}
	case n < 1<<16:
		h = binary.BigEndian.AppendUint16([]byte{b0, 126}, uint16(n))
	default:
		h = binary.BigEndian.AppendUint64([]byte{b0, 127}, uint64(n))
	}
	return append(h, payload...)
}

// deflate compresses s as a permessage-deflate message.
func deflate(tb testing.TB, s string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed)
	if _, err := w.Write([]byte(s)); err != nil {
		tb.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{0, 0, 0xff, 0xff})
}

func join(fs ...[]byte) []byte {
	var b []byte
	for _, f := range fs {
		b = append(b, f...)
	}
	return b
}

// The check passes a server's sound output, however the kernel took it,
// and reports the first bad frame: the truncated message and the empty
// one that chaos runs saw among them.
func TestFramesChecked(t *testing.T) {
	long := `{"t":"line","html":"` + strings.Repeat("x", 900) + `"}`
	sound := join(frame(0x81, `{"t":"state"}`), frame(0x89, ""), frame(0x81, long),
		frame(0x01, `{"t":"li`), frame(0x8a, "pong"), frame(0x80, `ne"}`), frame(0x88, "\x03\xe8bye"))
	cut := frame(0x81, long)
	binary.BigEndian.PutUint16(cut[2:4], 768) // the length's low byte zeroed

	z := deflate(t, long)
	for _, tc := range []struct {
		name    string
		out     []byte
		deflate bool
		want    string // "" for sound output
	}{
		{"sound", sound, false, ""},
		{"sound, compressed", join(frame(0xc1, string(z)), frame(0xc1, string(z)), sound), true, ""},
		{"compressed, then one cut", join(frame(0xc1, string(z)), frame(0xc1, string(z[:len(z)/2]))), true, "JSON"},
		{"compressed, not negotiated", frame(0xc1, string(z)), false, "reserved bit"},
		{"compressed, cut", frame(0xc1, string(z[:len(z)/2])), true, "JSON"},
		{"truncated", join(frame(0x81, `{"t":"state"}`), cut), false, "not one JSON object"},
		{"empty", join(frame(0x81, `{"t":"state"}`), frame(0x81, "")), false, "not one JSON object"},
		{"masked", []byte{0x81, 0x82, 1, 2, 3, 4, 'a', 'b'}, false, "masked"},
		{"reserved bit", frame(0xa1, "{}"), true, "reserved bit"},
		{"compressed ping", frame(0xc9, ""), true, "reserved bit"},
		{"long ping", frame(0x89, strings.Repeat("p", 126)), false, "control frame"},
		{"ping after close", join(frame(0x88, "\x03\xe9"), frame(0x89, "")), false, "after the close"},
		{"line after close", join(frame(0x88, ""), frame(0x81, `{"t":"line"}`)), false, "after the close"},
	} {
		for _, step := range []int{1, 7, 4096} {
			var got []string
			f := nbiocheck.NewFrames(func(m string) { got = append(got, m) }, tc.deflate)
			for b := tc.out; len(b) > 0; {
				n := min(step, len(b))
				f.Write(b[:n])
				b = b[n:]
			}
			if tc.want == "" {
				if len(got) != 0 {
					t.Errorf("%s by %d: sound output reported: %q", tc.name, step, got)
				}
				continue
			}
			if len(got) != 1 || !strings.Contains(got[0], tc.want) {
				t.Errorf("%s by %d: reports %q, want one of %q", tc.name, step, got, tc.want)
			}
		}
	}
}
