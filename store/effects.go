package store

import (
	"context"
	"strconv"

	"github.com/codemojex/feed/internal/event"
)

// effects accumulates what a set of really-inserted events does to games
// and players, so a batch touches each game and player row once instead of
// once per event. Sums (line counts, score, wins, guesses) add up;
// newer-wins groups keep the values of the event with the greatest EVT id
// in the set, and the SQL then applies them only over an older *_evt. The
// result is the same as applying the events one by one, in any order.
type effects struct {
	games   map[string]*gameFx
	players map[playerKey]*playerFx
	order   []playerKey // first-seen order, so SQL runs in a stable order
	gorder  []string
	args    []any // reused parameter slice
}

type playerKey struct{ game, name string }

type gameFx struct {
	events    int64
	lastEvtID string
	lastAt    int64

	infoEvt         string
	title, palette  string
	rounds, codeLen int
	statusEvt       string
	status          event.Status
	winner          string
	roundEvt        string
	round           int
}

type playerFx struct {
	avatarEvt, avatar string
	presentEvt        string
	present           bool
	guessEvt, guess   string
	exact, near       int
	score, wins       int64
	guesses           int64
}

func newEffects() *effects {
	return &effects{games: map[string]*gameFx{}, players: map[playerKey]*playerFx{}}
}

func (fx *effects) reset() {
	clear(fx.games)
	clear(fx.players)
	fx.order = fx.order[:0]
	fx.gorder = fx.gorder[:0]
}

func (fx *effects) game(name string) *gameFx {
	g := fx.games[name]
	if g == nil {
		g = &gameFx{}
		fx.games[name] = g
		fx.gorder = append(fx.gorder, name)
	}
	return g
}

func (fx *effects) player(game, name string) *playerFx {
	k := playerKey{game, name}
	p := fx.players[k]
	if p == nil {
		p = &playerFx{}
		fx.players[k] = p
		fx.order = append(fx.order, k)
	}
	return p
}

// add records one inserted event. Numeric fields were validated by the
// renderer (event.Validate); one that does not parse counts as 0 here
// rather than failing the entry.
func (fx *effects) add(e *Event, storedAt int64) {
	g := fx.game(e.Game)
	id, f := e.EvtID, e.Payload
	g.events++
	if id > g.lastEvtID {
		g.lastEvtID = id
	}
	g.lastAt = max(g.lastAt, storedAt)
	switch e.Kind {
	case event.KindGameStarted:
		if id > g.infoEvt {
			g.infoEvt, g.title, g.palette = id, f["title"], f["palette"]
			g.rounds, g.codeLen = atoi(f["rounds"]), atoi(f["code_length"])
		}
		// A game's stream may hold match after match: a new one starts
		// before its first round, not at the last match's.
		g.setRound(id, 0)
		g.setStatus(id, event.StatusPlaying, "")
	case event.KindRoundStarted:
		g.setRound(id, atoi(f["round"]))
		g.setStatus(id, event.StatusPlaying, "")
	case event.KindGameOver:
		g.setStatus(id, event.StatusOver, f["winner"])
	case event.KindRoundWon:
		g.setRound(id, atoi(f["round"]))
		if name := f["player"]; name != "" {
			p := fx.player(e.Game, name)
			p.score += atoi64(f["points"])
			p.wins++
		}
	case event.KindPlayerJoined:
		if name := f["player"]; name != "" {
			p := fx.player(e.Game, name)
			if id > p.avatarEvt {
				p.avatarEvt, p.avatar = id, f["avatar"]
			}
			p.setPresent(id, true)
		}
	case event.KindPlayerLeft:
		if name := f["player"]; name != "" {
			fx.player(e.Game, name).setPresent(id, false)
		}
	case event.KindGuess:
		if name := f["player"]; name != "" {
			p := fx.player(e.Game, name)
			p.guesses++
			if id > p.guessEvt {
				p.guessEvt, p.guess = id, f["guess"]
				p.exact, p.near = atoi(f["exact"]), atoi(f["near"])
			}
		}
	}
}

func (g *gameFx) setStatus(id string, status event.Status, winner string) {
	if id > g.statusEvt {
		g.statusEvt, g.status, g.winner = id, status, winner
	}
}

func (g *gameFx) setRound(id string, round int) {
	if id > g.roundEvt {
		g.roundEvt, g.round = id, round
	}
}

func (p *playerFx) setPresent(id string, present bool) {
	if id > p.presentEvt {
		p.presentEvt, p.present = id, present
	}
}

// apply writes the accumulated effects: multi-row upserts of the games,
// then of the players (players reference games).
func (fx *effects) apply(ctx context.Context, s *boundStmts) error {
	args := fx.args[:0]
	games := fx.gorder
	for len(games) > 0 {
		chunk := games[:multiSQL[mGame].chunk(len(games))]
		games = games[len(chunk):]
		args = args[:0]
		for _, name := range chunk {
			g := fx.games[name]
			status := g.status
			if g.statusEvt == "" {
				status = event.StatusWaiting // only used when the row is new
			}
			args = append(args, name,
				g.title, g.rounds, g.codeLen, g.palette, g.infoEvt,
				status, g.winner, g.statusEvt,
				g.round, g.roundEvt,
				g.events, g.lastEvtID, g.lastAt)
		}
		if _, err := s.rows(mGame, len(chunk)).ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	players := fx.order
	for len(players) > 0 {
		chunk := players[:multiSQL[mPlayer].chunk(len(players))]
		players = players[len(chunk):]
		args = args[:0]
		for _, k := range chunk {
			p := fx.players[k]
			args = append(args, k.game, k.name,
				p.avatar, p.avatarEvt,
				p.present, p.presentEvt,
				p.guess, p.exact, p.near, p.guessEvt,
				p.score, p.wins, p.guesses)
		}
		if _, err := s.rows(mPlayer, len(chunk)).ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	fx.args = args[:0]
	return nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
