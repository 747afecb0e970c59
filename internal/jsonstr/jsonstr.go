// Package jsonstr appends Go strings as JSON strings, byte for byte what
// encoding/json writes, without its reflection or its allocations. The
// store's payloads and the websocket frames are encoded on the hot path, and
// both are compared byte for byte with encoding/json's output (stores written
// before and after, browsers parsing frames), so there is one encoder.
package jsonstr

import (
	"unicode/utf8"
	"unsafe"
)

const hexDigits = "0123456789abcdef"

// Append appends s to b as a JSON string the way encoding/json does with
// SetEscapeHTML(false): quotes, backslashes and control characters escaped,
// U+2028 and U+2029 escaped (JavaScript line terminators), invalid UTF-8
// replaced by U+FFFD.
func Append(b []byte, s string) []byte { return appendString(b, s, false) }

// AppendHTMLSafe is Append with < > & escaped as \u003c \u003e \u0026, as
// json.Marshal writes them.
func AppendHTMLSafe(b []byte, s string) []byte { return appendString(b, s, true) }

// AppendBytes is Append of the text in p, without copying it into a string
// first: the websocket frames wrap HTML rendered into pooled buffers.
func AppendBytes(b, p []byte) []byte {
	// p is only read, and only during the call.
	return appendString(b, unsafe.String(unsafe.SliceData(p), len(p)), false)
}

func appendString(b []byte, s string, html bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || (c != '<' && c != '>' && c != '&')) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
