package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// SnapLine is a stored line as far as it must not depend on delivery: what
// any store fed the same events (in any order, with any duplicates) holds.
// Seq, stream position, renderer, attempts and store times are left out.
type SnapLine struct {
	EvtID   string
	Game    string
	Kind    string
	Payload string // JSON, keys sorted
	HTML    string
	At      time.Time
}

// Snapshot is a store's delivery-independent content: every line in EVT-id
// order (then by game: two games may carry the same EVT id, and seq, which
// would otherwise break the tie, is the store's own), every game's state
// and every scoreboard. Two stores fed the same
// events must have equal snapshots (see Diff); it is how rebuild-equals-live
// and replay-changes-nothing are checked.
type Snapshot struct {
	Lines   []SnapLine
	Games   []Game              // by name; LastAt zeroed (store clock)
	Players map[string][]Player // game → scoreboard order
}

// Snapshot reads the store (only the named games, when any are named) in
// one read transaction. It is meant for tests and for comparing two stores,
// not for the hot path.
func (db *DB) Snapshot(ctx context.Context, games ...string) (Snapshot, error) {
	only := func(string) bool { return true }
	if len(games) > 0 {
		set := map[string]bool{}
		for _, g := range games {
			set[g] = true
		}
		only = func(g string) bool { return set[g] }
	}
	var s Snapshot
	err := db.read(ctx, "snapshot", func() error {
		tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		s = Snapshot{Players: map[string][]Player{}}
		rows, err := tx.QueryContext(ctx, `SELECT evt_id, game, kind, payload, html, at FROM events ORDER BY evt_id, game`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var l SnapLine
			var at sql.NullInt64
			if err := rows.Scan(&l.EvtID, &l.Game, &l.Kind, &l.Payload, &l.HTML, &at); err != nil {
				rows.Close()
				return err
			}
			if at.Valid {
				l.At = time.Unix(0, at.Int64).UTC()
			}
			if only(l.Game) {
				s.Lines = append(s.Lines, l)
			}
		}
		// Err too: a failed Next closes the rows and leaves Close nil.
		if err := errors.Join(rows.Close(), rows.Err()); err != nil {
			return err
		}
		grows, err := tx.QueryContext(ctx, `SELECT `+gameCols+` FROM games ORDER BY name`)
		if err != nil {
			return err
		}
		for grows.Next() {
			g, err := scanGame(grows)
			if err != nil {
				grows.Close()
				return err
			}
			g.LastAt = time.Time{}
			if only(g.Name) {
				s.Games = append(s.Games, g)
			}
		}
		// Err too: a failed Next closes the rows and leaves Close nil.
		if err := errors.Join(grows.Close(), grows.Err()); err != nil {
			return err
		}
		for _, g := range s.Games {
			sb, err := scoreboard(ctx, tx, g.Name)
			if err != nil {
				return err
			}
			s.Players[g.Name] = sb.Players
		}
		return tx.Commit()
	})
	return s, err
}

// Diff lists the differences between two snapshots, at most max of them
// (max ≤ 0: 20). An empty result means the stores are equivalent. It is
// exported beside Snapshot, whose comparison it is, for the tests of other
// packages (e2e's rebuild-equals-live).
func Diff(a, b Snapshot, max int) []string {
	if max <= 0 {
		max = 20
	}
	var out []string
	add := func(format string, args ...any) bool {
		out = append(out, fmt.Sprintf(format, args...))
		return len(out) < max
	}
	if len(a.Lines) != len(b.Lines) {
		if !add("lines: %d vs %d", len(a.Lines), len(b.Lines)) {
			return out
		}
	}
	for i := 0; i < min(len(a.Lines), len(b.Lines)); i++ {
		x, y := a.Lines[i], b.Lines[i]
		if x != y && !(x.EvtID == y.EvtID && x.Game == y.Game && x.Kind == y.Kind && x.Payload == y.Payload &&
			x.HTML == y.HTML && x.At.Equal(y.At)) {
			if !add("line %d: %+v vs %+v", i, x, y) {
				return out
			}
		}
	}
	if len(a.Games) != len(b.Games) {
		if !add("games: %d vs %d", len(a.Games), len(b.Games)) {
			return out
		}
	}
	for i := 0; i < min(len(a.Games), len(b.Games)); i++ {
		if a.Games[i] != b.Games[i] {
			if !add("game %d: %+v vs %+v", i, a.Games[i], b.Games[i]) {
				return out
			}
		}
	}
	for _, g := range a.Games {
		pa, pb := a.Players[g.Name], b.Players[g.Name]
		if len(pa) != len(pb) {
			if !add("game %s players: %d vs %d", g.Name, len(pa), len(pb)) {
				return out
			}
			continue
		}
		for i := range pa {
			if pa[i] != pb[i] {
				if !add("game %s player %d: %+v vs %+v", g.Name, i, pa[i], pb[i]) {
					return out
				}
			}
		}
	}
	return out
}

// compare snapshots two stores and lists their differences (see Diff): the
// check behind "rebuild equals live" and "replay changes nothing".
func compare(ctx context.Context, a, b *DB, max int, games ...string) ([]string, error) {
	sa, err := a.Snapshot(ctx, games...)
	if err != nil {
		return nil, err
	}
	sb, err := b.Snapshot(ctx, games...)
	if err != nil {
		return nil, err
	}
	return Diff(sa, sb, max), nil
}
