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
// Minter, so a step back in t reuses the last millisecond). A t before
// 1970 counts as the epoch, one past the year 10889 as ULID's last
// millisecond. Next never panics: past ULID's very last id
// (evt_7ZZZZZZZZZZZZZZZZZZZZZZZZZ), which only a Minter that minted some
// 2^48 ids in that last millisecond reaches, there is no id to move on
// to, and Next returns that id again.
func (m *Minter) Next(t time.Time) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := max(timestamp(t), m.last.Time())
	u, err := ulid.New(ms, m.entropy)
	if err != nil && ms < ulid.MaxTime() {
		// The monotonic entropy overflowed within one millisecond: move on
		// to the next millisecond, which resets it.
		u, err = ulid.New(ms+1, m.entropy)
	}
	if err != nil || u.Compare(m.last) <= 0 {
		// The last id came from After, not from the entropy, or the
		// entropy overflowed in ULID's last millisecond, where there is
		// no next one (ulid.New would fail "time too big"): go on from
		// the last id.
		u = m.last
		if !increment(&u) {
			u = m.last
			if ms := u.Time(); ms < ulid.MaxTime() {
				if next, err := ulid.New(ms+1, m.entropy); err == nil {
					u = next
				}
			}
		}
	}
	m.last = u
	return IDPrefix + u.String()
}

// The times a ULID holds: from the epoch to its last millisecond (in
// the year 10889).
var (
	epoch   = time.UnixMilli(0)
	maxTime = time.UnixMilli(int64(ulid.MaxTime()))
)

// timestamp returns t in unix ms, the nearest time a ULID holds: before
// the epoch, ulid.Timestamp would wrap around to a time too big.
func timestamp(t time.Time) uint64 {
	switch {
	case t.Before(epoch):
		return 0
	case t.After(maxTime):
		return ulid.MaxTime()
	}
	return ulid.Timestamp(t)
}

// After makes the ids m mints from now on sort after id, a valid EVT id
// (others are ignored): a writer that restarts resumes after the last id
// it wrote, as if its Minter had lived on, whatever its clock says now (a
// step back, or a restart within the millisecond of that id). An id in
// ULID's last millisecond (the year 10889, which no clock reaches: a
// forged id, or one minted from a clock gone wrong) is ignored too: the
// ids after it run out within that millisecond, there is none after
// evt_7ZZZZZZZZZZZZZZZZZZZZZZZZZ, and a Minter must go on minting distinct
// ids. Until 6 Dec 2026 After took it, and Next then panicked.
func (m *Minter) After(id string) {
	if !ValidID(id) {
		return
	}
	u, err := ulid.ParseStrict(id[len(IDPrefix):])
	if err != nil || u.Time() >= ulid.MaxTime() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if u.Compare(m.last) > 0 {
		m.last = u
	}
}

// increment adds one to u's random part, reporting false when it
// overflowed.
func increment(u *ulid.ULID) bool {
	for i := len(u) - 1; i >= 6; i-- {
		u[i]++
		if u[i] != 0 {
			return true
		}
	}
	return false
}
