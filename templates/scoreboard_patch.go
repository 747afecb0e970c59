package templates

import (
	"time"

	"github.com/codemojex/feed/store"
)

// SamePanel reports whether a and b render the same scoreboard panel
// (Scoreboard), without rendering either. The game's fields that the panel
// does not show, its line count and latest line, change with every line
// and are left out; every other field counts, so a field the panel comes
// to show is compared without a change here.
func SamePanel(a, b store.Scoreboard) bool {
	if shownGame(a.Game) != shownGame(b.Game) || len(a.Players) != len(b.Players) {
		return false
	}
	for i := range a.Players {
		if a.Players[i] != b.Players[i] {
			return false
		}
	}
	return true
}

func shownGame(g store.Game) store.Game {
	g.Events, g.LastAt, g.LastEvtID = 0, time.Time{}, ""
	return g
}

// PatchRows sets keep[i], for each of next's rows, to whether the row
// renders the same bytes as prev's row of the same player: a page that
// shows prev's panel can keep it when it applies ScoreboardPatch(next,
// keep). keep is reused when it has the room.
func PatchRows(prev, next store.Scoreboard, keep []bool) []bool {
	keep = keep[:0]
	// A row is a function of its player and of whether it leads (scoreRow).
	old := make(map[string]int, len(prev.Players))
	for i, p := range prev.Players {
		old[p.Name] = i
	}
	for i, p := range next.Players {
		j, ok := old[p.Name]
		keep = append(keep, ok && prev.Players[j] == p && leads(j, prev.Players[j]) == leads(i, p))
	}
	return keep
}

// leads reports whether the row at i, of p, is the leader's (scoreRow).
func leads(i int, p store.Player) bool { return i == 0 && p.Score > 0 }
