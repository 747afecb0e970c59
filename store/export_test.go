package store

// Exported to the tests.
var (
	Compare      = compare
	LatestSchema = latestSchema
)

// BoardCached reports whether db's board cache holds game as of seq.
func BoardCached(db *DB, game string, seq int64) bool {
	_, ok := db.boards.get(game, seq)
	return ok
}
