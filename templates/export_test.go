package templates

import (
	"context"
	"io"

	"github.com/a-h/templ"
)

// LineItem is LineItemHTML as a component, for the tests.
func LineItem(seq int64, evtID, kind, body string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := io.WriteString(w, LineItemHTML(seq, evtID, kind, body))
		return err
	})
}

// Symbols is symbols: a line's split of an emoji field, for the tests.
var Symbols = symbols
