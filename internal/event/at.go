package event

import "time"

// atLayout is the layout of the "at" field: RFC 3339, UTC, millisecond
// precision. ParseAt accepts any RFC 3339 time, with or without fractions.
const atLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatAt formats a writer's clock as entries carry it in the "at" field.
func FormatAt(t time.Time) string {
	return t.UTC().Format(atLayout)
}

// ParseAt parses the "at" field of an entry. A missing or bad value is the
// zero time: the field is for display only, so it never makes an entry
// malformed.
func ParseAt(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}
