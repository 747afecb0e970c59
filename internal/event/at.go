package event

import (
	"math"
	"time"
)

// atLayout is the layout of the "at" field: RFC 3339, UTC, millisecond
// precision. ParseAt accepts any RFC 3339 time, with or without fractions.
const atLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatAt formats a writer's clock as entries carry it in the "at" field.
func FormatAt(t time.Time) string {
	return t.UTC().Format(atLayout)
}

// The times the store can keep: it keeps a line's time as unix
// nanoseconds, which hold the years 1678 to 2262.
var (
	minAt = time.Unix(0, math.MinInt64)
	maxAt = time.Unix(0, math.MaxInt64)
)

// ParseAt parses the "at" field of an entry. A missing or bad value is the
// zero time: the field is for display only, so it never makes an entry
// malformed. So is a time the store cannot keep (before 1678 or after
// 2262), which it would give back as another time than the line shows.
func ParseAt(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Before(minAt) || t.After(maxAt) {
		return time.Time{}
	}
	return t.UTC()
}
