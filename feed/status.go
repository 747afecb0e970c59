package feed

import "time"

// Status is a snapshot of a consumer group's health over its streams, as
// shown by /status, /api/status and feedctl status.
type Status struct {
	Group     string         `json:"group"`
	At        time.Time      `json:"at"`
	Renderers []string       `json:"renderers"` // consumer names holding a live lease
	Games     int64          `json:"games"`     // games in the registry (Streams may show fewer)
	Streams   []StreamStatus `json:"streams"`
	// Notes are what the renderer serving the status wants an operator to
	// know: a pause and its reason, a gap, groups re-created, a store
	// caught up or replaced (Consumer.Notes and the renderer's own).
	Notes []Note `json:"notes,omitempty"`
}

// StreamStatus is one stream's row of a Status.
type StreamStatus struct {
	Stream            string           `json:"stream"`
	Game              string           `json:"game,omitempty"`
	Length            int64            `json:"length"`
	Lag               int64            `json:"lag"` // entries not yet delivered to the group; -1 when unknown
	Pending           int64            `json:"pending"`
	OldestPendingIdle time.Duration    `json:"oldest_pending_idle_ns"`
	Dead              int64            `json:"dead"` // length of the dead-letter stream
	Consumers         []ConsumerStatus `json:"consumers"`
	Err               string           `json:"error,omitempty"` // e.g. WRONGTYPE: loud, per stream
}

// ConsumerStatus is one consumer of a stream's group.
type ConsumerStatus struct {
	Name    string        `json:"name"`
	Pending int64         `json:"pending"`
	Idle    time.Duration `json:"idle_ns"`
	Alive   bool          `json:"alive"` // holds a live lease
}
