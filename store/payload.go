package store

import (
	"slices"
	"unsafe"

	"github.com/codemojex/feed/internal/jsonstr"
)

// encodePayload renders an entry's fields as a JSON object with sorted
// keys, byte for byte what encoding/json.Marshal produces for a
// map[string]string (HTML-safe escapes included), without its reflection:
// this runs once per event on the hot path.
func encodePayload(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	var keyBuf [16]string
	keys := keyBuf[:0]
	n := 2
	for k, v := range m {
		keys = append(keys, k)
		n += len(k) + len(v) + 6
	}
	slices.Sort(keys)
	b := make([]byte, 0, n+n/8)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.AppendHTMLSafe(b, k)
		b = append(b, ':')
		b = jsonstr.AppendHTMLSafe(b, m[k])
	}
	b = append(b, '}')
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is never written again
}
