// Package feed consumes Redis streams in a consumer group by the reader law
// of docs/reader-law.md. It knows nothing of SQL, HTML or HTTP.
package feed

import (
	"context"
)

// Message is one stream entry handed to a handler.
type Message struct {
	ID       string            // the branded EVT id from the entry's id field
	Kind     string            // Payload["kind"]
	Payload  map[string]string // every field but id
	Attempts int64             // the server's delivery count (1 on first delivery)
	Group    string            // consumer group
	Stream   string            // stream key, for the settle
	Position string            // stream entry id, for the settle
}

// Handler handles one entry. It must be idempotent on m.ID. Returning nil
// acknowledges the entry; an error leaves it pending for a retry no sooner
// than min-idle later; an error made with Poison dead-letters it at once.
type Handler func(ctx context.Context, m Message) error

// BatchHandler handles a batch of entries and returns one verdict per entry,
// in order, with the same meaning as Handler's.
type BatchHandler func(ctx context.Context, ms []Message) []error
