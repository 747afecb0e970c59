package e2e_test

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/feed"
	"github.com/codemojex/feed/internal/event"
)

// playerSums are the inserted-only sums of one player, recomputed from the
// events.
type playerSums struct{ score, wins, guesses int64 }

// gameTruth is what a game's stream holds, classified as a renderer must.
type gameTruth struct {
	good    map[string]string // EVT id → stream position, well-formed entries
	bad     map[string]bool   // stream positions of malformed entries
	players map[string]*playerSums
}

// streamTruth is every game's stream, read at the end of the run.
type streamTruth struct {
	games     map[string]*gameTruth
	good, bad int64
}

// readStreams reads every game's stream with XRANGE and classifies each
// entry with feed.Decode and event.Validate, as the renderer's handler
// does: well-formed entries must be stored, malformed ones dead-lettered.
func readStreams(t *testing.T, c *cluster, games []string) streamTruth {
	t.Helper()
	ctx := context.Background()
	st := streamTruth{games: map[string]*gameTruth{}}
	for _, g := range games {
		gt := &gameTruth{good: map[string]string{}, bad: map[string]bool{}, players: map[string]*playerSums{}}
		st.games[g] = gt
		key := event.StreamKey(g)
		for start := "-"; ; {
			xs, err := c.rdb.XRangeN(ctx, key, start, "+", 1000).Result()
			if err != nil {
				t.Fatalf("xrange %s: %v", key, err)
			}
			for _, x := range xs {
				m, err := feed.Decode(key, x)
				if err == nil {
					err = event.Validate(m.Kind, m.Payload)
				}
				if err != nil {
					gt.bad[x.ID] = true
					st.bad++
					continue
				}
				if pos, dup := gt.good[m.ID]; dup {
					t.Errorf("%s: writer wrote %s twice (at %s and %s)", key, m.ID, pos, x.ID)
				}
				gt.good[m.ID] = x.ID
				st.good++
				gt.tally(t, m)
			}
			if len(xs) < 1000 {
				break
			}
			start = "(" + xs[len(xs)-1].ID
		}
	}
	return st
}

// tally adds a well-formed event to its player's sums.
func (gt *gameTruth) tally(t *testing.T, m feed.Message) {
	t.Helper()
	if m.Kind != event.KindRoundWon && m.Kind != event.KindGuess {
		return
	}
	name := m.Payload["player"]
	p := gt.players[name]
	if p == nil {
		p = &playerSums{}
		gt.players[name] = p
	}
	if m.Kind == event.KindGuess {
		p.guesses++
		return
	}
	points, err := strconv.ParseInt(m.Payload["points"], 10, 64)
	if err != nil {
		t.Fatalf("%s: points %q: %v", m.ID, m.Payload["points"], err)
	}
	p.score += points
	p.wins++
}

// chaosDB reads the shared SQLite file read-only, as a bystander.
type chaosDB struct{ db *sql.DB }

func openChaosDB(t *testing.T, path string) *chaosDB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &chaosDB{db: db}
}

// count returns the number of stored lines, -1 when unreadable.
func (d *chaosDB) count() int64 {
	var n int64
	if err := d.db.QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil {
		return -1
	}
	return n
}

// storeView is the store's timeline at the end of the run.
type storeView struct {
	rows     int64
	distinct int64
	ids      map[string][]string // game → EVT ids in EVT-id order
	pos      map[string]string   // EVT id → stream position it was stored from
}

func (d *chaosDB) timeline(t *testing.T) storeView {
	t.Helper()
	v := storeView{ids: map[string][]string{}, pos: map[string]string{}}
	if err := d.db.QueryRow(`SELECT count(*), count(DISTINCT evt_id) FROM events`).Scan(&v.rows, &v.distinct); err != nil {
		t.Fatalf("store: count: %v", err)
	}
	rows, err := d.db.Query(`SELECT evt_id, game, stream_id FROM events ORDER BY evt_id`)
	if err != nil {
		t.Fatalf("store: read events: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, game, pos string
		if err := rows.Scan(&id, &game, &pos); err != nil {
			t.Fatal(err)
		}
		v.ids[game] = append(v.ids[game], id)
		v.pos[id] = pos
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("store: read events: %v", err)
	}
	return v
}

func (d *chaosDB) players(t *testing.T) map[string]map[string]playerSums {
	t.Helper()
	rows, err := d.db.Query(`SELECT game, name, score, wins, guesses FROM players`)
	if err != nil {
		t.Fatalf("store: read players: %v", err)
	}
	defer rows.Close()
	out := map[string]map[string]playerSums{}
	for rows.Next() {
		var game, name string
		var p playerSums
		if err := rows.Scan(&game, &name, &p.score, &p.wins, &p.guesses); err != nil {
			t.Fatal(err)
		}
		if out[game] == nil {
			out[game] = map[string]playerSums{}
		}
		out[game][name] = p
	}
	return out
}

// deadView is the dead-letter streams, counted by original position.
type deadView struct {
	total int64
	byPos map[string]map[string]int // game → dead_stream_id → letters
}

// deadCount sums XLEN of the dead-letter streams, in one pipeline; -1 when
// Redis does not answer.
func deadCount(c *cluster, games []string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(games))
	for i, g := range games {
		cmds[i] = pipe.XLen(ctx, event.DeadKey(g))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return -1
	}
	var n int64
	for _, cmd := range cmds {
		n += cmd.Val()
	}
	return n
}

func readDead(t *testing.T, c *cluster, games []string) deadView {
	t.Helper()
	ctx := context.Background()
	v := deadView{byPos: map[string]map[string]int{}}
	for _, g := range games {
		v.byPos[g] = map[string]int{}
		xs, err := c.rdb.XRange(ctx, event.DeadKey(g), "-", "+").Result()
		if err != nil {
			t.Fatalf("xrange %s: %v", event.DeadKey(g), err)
		}
		for _, x := range xs {
			pos, _ := x.Values[feed.DeadStreamID].(string)
			if pos == "" {
				t.Errorf("%s: dead letter %s has no %s", event.DeadKey(g), x.ID, feed.DeadStreamID)
			}
			v.byPos[g][pos]++
			v.total++
		}
	}
	return v
}

// checkStore: every well-formed entry is stored exactly once, from its own
// stream position, and nothing else is stored.
func checkStore(t *testing.T, truth streamTruth, st storeView) (lost, doubled int) {
	t.Helper()
	doubled = int(st.rows - st.distinct)
	for g, gt := range truth.games {
		want := make([]string, 0, len(gt.good))
		for id := range gt.good {
			want = append(want, id)
		}
		sort.Strings(want)
		missing, extra := diff(want, st.ids[g])
		lost += len(missing)
		if len(missing) > 0 || len(extra) > 0 {
			t.Errorf("store %s: %d lines for %d well-formed entries: missing %s, not well-formed entries of the stream %s",
				g, len(st.ids[g]), len(want), describe(missing), describe(extra))
		}
		wrong := 0
		for id, pos := range gt.good {
			if got, ok := st.pos[id]; ok && got != pos {
				if wrong++; wrong <= 3 {
					t.Errorf("store %s: %s stored from position %s, written at %s", g, id, got, pos)
				}
			}
		}
	}
	for g := range st.ids {
		if truth.games[g] == nil {
			t.Errorf("store holds %d lines of %q, a game nobody wrote", len(st.ids[g]), g)
		}
	}
	return lost, doubled
}

// checkDead: every malformed entry is dead-lettered exactly once, and
// nothing else is.
func checkDead(t *testing.T, truth streamTruth, dead deadView) (lost, doubled int) {
	t.Helper()
	for g, gt := range truth.games {
		var missing, twice, stray []string
		for pos := range gt.bad {
			switch n := dead.byPos[g][pos]; {
			case n == 0:
				missing = append(missing, pos)
			case n > 1:
				twice = append(twice, fmt.Sprintf("%s×%d", pos, n))
				doubled += n - 1
			}
		}
		for pos := range dead.byPos[g] {
			if !gt.bad[pos] {
				stray = append(stray, pos)
			}
		}
		lost += len(missing)
		if len(missing)+len(twice)+len(stray) > 0 {
			sort.Strings(missing)
			sort.Strings(twice)
			sort.Strings(stray)
			t.Errorf("dead letters of %s: malformed not dead-lettered %s, dead-lettered twice %s, dead but well-formed %s",
				g, describe(missing), describe(twice), describe(stray))
		}
	}
	return lost, doubled
}

// checkScores: each player's score, wins and guesses in the store equal
// the sums recomputed from the well-formed events.
func checkScores(t *testing.T, truth streamTruth, got map[string]map[string]playerSums) {
	t.Helper()
	for g, gt := range truth.games {
		bad := 0
		for name, want := range gt.players {
			if have := got[g][name]; have != *want {
				if bad++; bad <= 3 {
					t.Errorf("scoreboard %s/%s: store has score=%d wins=%d guesses=%d, events sum to score=%d wins=%d guesses=%d",
						g, name, have.score, have.wins, have.guesses, want.score, want.wins, want.guesses)
				}
			}
		}
		for name, have := range got[g] {
			if gt.players[name] == nil && have != (playerSums{}) {
				t.Errorf("scoreboard %s/%s: store has score=%d wins=%d guesses=%d, no event of that player scores",
					g, name, have.score, have.wins, have.guesses)
			}
		}
	}
}
