// Package store is the SQLite ground truth of the feed: rendered lines keyed
// by EVT id, the browsers' seq cursor, and per-game state (scoreboard, game
// status). It knows nothing of Redis or HTTP.
package store

import (
	"errors"
	"time"

	"github.com/codemojex/feed/internal/event"
)

// Errors of the store.
var (
	// ErrNotFound is returned for a game the store has no line of.
	ErrNotFound = errors.New("store: not found")
	// ErrSchemaNewer is returned by Open and OpenReadOnly for a file
	// migrated by a newer binary: an older one must not write to it, nor
	// trust its reads of it.
	ErrSchemaNewer = errors.New("store: database schema is newer than this binary knows")
	// ErrSchemaOlder is returned by OpenReadOnly for a file whose schema
	// lacks tables its reads query: it would have to be migrated, which a
	// read-only open never does (Open does).
	ErrSchemaOlder = errors.New("store: database schema is older than a read-only open needs")
	// ErrReadOnly is returned by the writing methods (Upsert, UpsertBatch,
	// DeleteGame) of a DB opened with OpenReadOnly.
	ErrReadOnly = errors.New("store: opened read-only")
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("store: closed")
	// ErrInvalidEvent marks an Upsert entry that cannot be stored as given
	// (no EVT id, no game or no kind); it is that entry's Result.Err.
	ErrInvalidEvent = errors.New("store: invalid event")
	// ErrUnavailable wraps every error of a write the store could not make
	// for a reason of its own (full disk, I/O, read-only, locked, timeout):
	// see Unavailable.
	ErrUnavailable = errors.New("store: unavailable")
	// ErrReplaced is returned when the store file at the path is no longer
	// the one opened (see CheckFile).
	ErrReplaced = errors.New("store: file deleted or replaced under the running process")
	// ErrConflict is an Upsert entry's Result.Err when its (game, EVT id) is
	// stored with a different payload: the first line stays.
	ErrConflict = errors.New("store: conflict")
	// ErrNewerLines is returned by DeleteGameUpTo for a game with a line
	// above the seq it was given: one stored after that seq was read. The
	// game is left whole.
	ErrNewerLines = errors.New("store: the game has lines stored after the bound")
)

// Event is one entry handed to Upsert: the decoded stream entry and its
// rendered line.
type Event struct {
	EvtID    string            // branded EVT id, the dedup key
	Game     string            // game name
	Kind     string            // entry kind (may be unknown to this version)
	Payload  map[string]string // every field but id (includes kind and at)
	HTML     string            // rendered line body (templates.RenderLine)
	StreamID string            // stream position, e.g. 1700000000000-0
	Renderer string            // consumer name that handled it
	Attempts int64             // delivery count when handled
	At       time.Time         // writer's clock ("at"), zero when absent or invalid
}

// Result is the verdict of one Event in an Upsert batch.
type Result struct {
	Inserted bool  // false: the EVT id was already stored (a no-op)
	Err      error // non-nil: this entry was not stored; leave it pending
	Seq      int64 // the new line's seq when Inserted, else 0
}

// Line is a stored, rendered timeline line.
type Line struct {
	Seq   int64  // store insertion order: the browsers' resume cursor
	EvtID string // timeline order
	Game  string
	Kind  string
	HTML  string // rendered body, without the <li> wrapper
	At    time.Time
}

// Game is a game's summary and newer-wins state.
type Game struct {
	Name      string
	Title     string
	Status    event.Status
	Round     int
	Rounds    int
	CodeLen   int
	Palette   string
	Winner    string
	Events    int64     // stored lines
	LastAt    time.Time // store time of the latest stored line
	LastEvtID string
}

// Player is one row of a game's scoreboard.
type Player struct {
	Name      string
	Avatar    string
	Present   bool   // joined and not left (newer-wins)
	Score     int64  // sum of round_won points (inserted-only)
	Wins      int64  // rounds won (inserted-only)
	Guesses   int64  // guesses made (inserted-only)
	LastGuess string // newer-wins
	LastExact int
	LastNear  int
}

// Scoreboard is a game's state for the scoreboard panel.
type Scoreboard struct {
	Game    Game
	Players []Player // by score desc, then name
}

// Page is what a game page is rendered from: the latest lines and the seq
// they were read at, in one read transaction.
type Page struct {
	Lines []Line // newest first (EVT id descending)
	Seq   int64  // the highest seq in the store at the read
	// Last is the EVT id of the game's line with the greatest seq at or
	// below Seq ("" when the game has none): what a browser that resumes
	// from Seq holds last (LastAt).
	Last  string
	Board Scoreboard
}
