package templates

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/store"
)

// pgTitle is a page title as the <title> shows it: one that is not all
// ASCII (a game's title or name, player text) in an isolate of its own,
// balanced as a line's fields are (isolated), so that neither its
// right-to-left letters nor an override in it turns " · codemojex feed"
// after it around in the browser's tab or history.
func pgTitle(title string) string {
	for i := 0; i < len(title); i++ {
		if title[i] >= utf8.RuneSelf {
			return string(fsi) + isolated(title) + string(pdi)
		}
	}
	return title
}

// pgStatusClass maps a game status to a CSS class suffix; unknown statuses
// (stored from newer writers) fall back to a neutral one.
func pgStatusClass(s event.Status) string {
	switch s {
	case event.StatusWaiting, event.StatusPlaying, event.StatusOver:
		return string(s)
	}
	return "unknown"
}

// pgStatusText is the label of a game status.
func pgStatusText(s event.Status) string {
	switch s {
	case event.StatusWaiting:
		return "waiting"
	case event.StatusPlaying:
		return "playing"
	case event.StatusOver:
		return "game over"
	case "":
		return "unknown"
	}
	return string(s)
}

func pgRoundText(g store.Game) string {
	if g.Rounds <= 0 {
		return strconv.Itoa(g.Round)
	}
	return strconv.Itoa(g.Round) + "/" + strconv.Itoa(g.Rounds)
}

func pgAvatarOf(p store.Player) string {
	if p.Avatar == "" {
		return "👤"
	}
	return p.Avatar
}

func pgGameTitle(g store.Game) string {
	if g.Title != "" {
		return g.Title
	}
	return g.Name
}

// pgRfc3339 is the machine-readable time of a <time> element; the page script
// derives the relative text from it.
func pgRfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// pgAbsolute is the human-readable absolute time shown as a tooltip.
func pgAbsolute(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// relative is the server's first rendering of a relative time; the page
// script keeps it fresh.
func pgRelative(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return "never"
	case d < 5*time.Second:
		return "just now"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s ago"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m ago"
	case d < 24*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h ago"
	}
	return t.UTC().Format("2006-01-02")
}

func pgItoa64(n int64) string { return strconv.FormatInt(n, 10) }

// durationText shows a duration rounded for humans (status page).
func pgDurationText(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// boardSummary is the scoreboard's one-line digest, shown when the panel is
// collapsed (on a phone): the game's state, the leader and the players.
func boardSummary(b store.Scoreboard) string {
	s := pgStatusText(b.Game.Status)
	if b.Game.Rounds > 0 {
		s += " · round " + pgRoundText(b.Game)
	}
	if len(b.Players) > 0 && b.Players[0].Score > 0 {
		// Isolated (FSI…PDI): a right-to-left override in the name
		// must not flip the rest of the line.
		s += " · " + string(fsi) + isolated(b.Players[0].Name) + string(pdi) + " leads with " + strconv.FormatInt(b.Players[0].Score, 10)
	}
	switch n := len(b.Players); n {
	case 0:
	case 1:
		s += " · 1 player"
	default:
		s += " · " + strconv.Itoa(n) + " players"
	}
	return s
}
