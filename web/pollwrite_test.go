package web_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/codemojex/feed/web"
)

// TestAppendTextFrame: the nbio engine frames its gathered messages itself;
// each is one final, unmasked text frame with the shortest length encoding
// (RFC 6455, section 5.2), RSV1 set when compressed (RFC 7692), read back
// here by the RFCs' rules.
func TestAppendTextFrame(t *testing.T) {
	for _, tc := range []struct {
		n          int
		compressed bool
	}{{0, false}, {1, false}, {125, false}, {126, false}, {127, true}, {65535, false}, {65536, true}, {70000, false}} {
		n, want0 := tc.n, byte(0x81)
		if tc.compressed {
			want0 = 0xc1
		}
		data := bytes.Repeat([]byte{'x'}, n)
		prefix := []byte("before")
		b := web.AppendTextFrame(append([]byte(nil), prefix...), data, tc.compressed)
		if !bytes.HasPrefix(b, prefix) {
			t.Fatalf("n=%d: the buffer's earlier bytes changed", n)
		}
		f := b[len(prefix):]
		if f[0] != want0 {
			t.Fatalf("n=%d: first byte %#x, want FIN, text and RSV1 when compressed (%#x)", n, f[0], want0)
		}
		if f[1]&0x80 != 0 {
			t.Fatalf("n=%d: masked", n)
		}
		var got uint64
		head := 2
		switch l := f[1] & 0x7f; {
		case l < 126:
			got = uint64(l)
		case l == 126:
			got, head = uint64(binary.BigEndian.Uint16(f[2:])), 4
			if got < 126 {
				t.Fatalf("n=%d: 16-bit length for a short frame", n)
			}
		default:
			got, head = binary.BigEndian.Uint64(f[2:]), 10
			if got < 1<<16 {
				t.Fatalf("n=%d: 64-bit length for a frame that fits 16 bits", n)
			}
		}
		if got != uint64(n) || len(f) != head+n || !bytes.Equal(f[head:], data) {
			t.Fatalf("n=%d: length %d, frame of %d bytes with a %d-byte head", n, got, len(f), head)
		}
	}
}
