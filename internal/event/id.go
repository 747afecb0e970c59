package event

import (
	"io"
	"math/rand"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// IDPrefix brands every EVT id.
const IDPrefix = "evt_"

// IDLen is the length of an EVT id: the prefix and a 26-character ULID.
const IDLen = len(IDPrefix) + 26

// ValidID reports whether s is an EVT id: "evt_" and a 26-character ULID in
// upper-case Crockford base32 whose first character is at most '7' (so the
// 128-bit value does not overflow).
func ValidID(s string) bool {
	if len(s) != IDLen || s[:len(IDPrefix)] != IDPrefix {
		return false
	}
	u := s[len(IDPrefix):]
	if u[0] > '7' {
		return false
	}
	for i := 0; i < len(u); i++ {
		if !crockford(u[i]) {
			return false
		}
	}
	return true
}

func crockford(c byte) bool {
	switch {
	case c >= '0' && c <= '9':
		return true
	case c >= 'A' && c <= 'Z':
		return c != 'I' && c != 'L' && c != 'O' && c != 'U'
	}
	return false
}

// IDTime returns the millisecond timestamp encoded in a valid EVT id.
// It is part of the id contract (docs/contracts.md), beside ValidID and
// Minter, though today only tests (gamesim's) read an id's time back.
func IDTime(id string) (time.Time, bool) {
	if !ValidID(id) {
		return time.Time{}, false
	}
	u, err := ulid.ParseStrict(id[len(IDPrefix):])
	if err != nil {
		return time.Time{}, false
	}
	return ulid.Time(u.Time()), true
}

// Minter mints strictly increasing EVT ids, safe for concurrent use. Ids
// minted by one Minter sort in mint order, byte for byte.
type Minter struct {
	mu      sync.Mutex
	entropy io.Reader
	last    ulid.ULID
}

// NewMinter returns a Minter whose random part comes from seed.
func NewMinter(seed int64) *Minter {
	return &Minter{entropy: ulid.Monotonic(rand.New(rand.NewSource(seed)), 0)}
}

// Next mints an id at time t (or later: the clock never goes back for a
// Minter, so a step back in t reuses the last millisecond).
func (m *Minter) Next(t time.Time) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := ulid.Timestamp(t)
	if ms < m.last.Time() {
		ms = m.last.Time()
	}
	u, err := ulid.New(ms, m.entropy)
	if err != nil {
		// The monotonic entropy overflowed within one millisecond: move on
		// to the next millisecond, which resets it.
		u = ulid.MustNew(ms+1, m.entropy)
	}
	m.last = u
	return IDPrefix + u.String()
}
