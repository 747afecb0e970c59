package store

// Exported to the tests.
var (
	Compare      = compare
	LatestSchema = latestSchema
)
