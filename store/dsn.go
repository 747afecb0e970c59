package store

import (
	"fmt"
	"net/url"
	"time"
)

// writerBusyMax bounds the writer connection's busy timeout: a batch's
// BEGIN IMMEDIATE waits for another process's write lock inside SQLite,
// where its context is not watched (see attempt), for at most this long;
// then retryBusy backs off, watching the context, and begins again.
const writerBusyMax = 250 * time.Millisecond

// Connection roles: each gets the pragmas it needs.
const (
	roleWriter = iota
	roleReader
	roleCheckpointer
	roleReadOnly // OpenReadOnly's pool: SQLite read-only, writes nothing
)

// dsn builds the modernc DSN. Connection pragmas go in the DSN so every
// pooled connection gets them; write transactions BEGIN IMMEDIATE so a
// writer takes the lock up front and never fails half-way on an upgrade.
// Page caches are sized per role (the writer's index pages stay hot; a
// reader touches a page of lines) to keep a renderer's memory modest.
func dsn(abs string, busy time.Duration, role int) string {
	if role == roleWriter {
		busy = min(busy, writerBusyMax)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// Multi-row upserts need a statement journal; keep it in memory
	// rather than in a temp file (it spills past 64 KiB otherwise).
	q.Add("_pragma", "temp_store(MEMORY)")
	switch role {
	case roleWriter:
		q.Set("_txlock", "immediate")
		q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", walSafetyPages))
		q.Add("_pragma", "cache_size(-16384)") // KiB
	case roleReader:
		q.Add("_pragma", "query_only(1)")
		q.Add("_pragma", "cache_size(-4096)")
	case roleCheckpointer:
		q.Add("_pragma", "wal_autocheckpoint(0)")
	case roleReadOnly:
		// mode=ro is SQLite's own URI parameter: the file is opened
		// read-only, so no statement (a migration, a checkpoint) can
		// write it, and a missing file is an error rather than created.
		q.Set("mode", "ro")
		q.Add("_pragma", "query_only(1)")
		q.Add("_pragma", "cache_size(-4096)")
	}
	u := url.URL{Path: abs}
	return "file:" + u.EscapedPath() + "?" + q.Encode()
}
