package gamesim

import (
	"math/rand"
	"strconv"
	"strings"
	"time"

	"github.com/codemojex/feed/internal/event"
)

// CodeLength is the length of every secret code the simulator plays.
const CodeLength = 4

// PaletteSize is the number of emoji a match draws its codes from.
const PaletteSize = 8

// Field is one field of an entry, in the order it is written.
type Field struct {
	Name, Value string
}

// Event is one well-formed event of a game as the writer sends it, before
// it is stamped with an EVT id and a time.
type Event struct {
	Kind   string
	Fields []Field // the kind's own fields, in order
}

// Get returns the value of the field name, or "".
func (e Event) Get(name string) string {
	for _, f := range e.Fields {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// Entry returns the entry's flat field/value list as XADD takes it: id,
// kind, at, then the kind's fields.
func (e Event) Entry(id string, at time.Time) []string {
	out := make([]string, 0, 6+2*len(e.Fields))
	out = append(out, event.FieldID, id, event.FieldKind, e.Kind, event.FieldAt, event.FormatAt(at))
	for _, f := range e.Fields {
		out = append(out, f.Name, f.Value)
	}
	return out
}

// Payload returns the entry's fields but id, as a handler sees them.
func (e Event) Payload(at time.Time) map[string]string {
	m := make(map[string]string, 2+len(e.Fields))
	m[event.FieldKind] = e.Kind
	m[event.FieldAt] = event.FormatAt(at)
	for _, f := range e.Fields {
		m[f.Name] = f.Value
	}
	return m
}

// Score returns the exact and near counts of guess against secret, both
// given as symbols: exact counts right symbols in the right place, near
// right symbols in the wrong place.
func Score(secret, guess []string) (exact, near int) {
	counts := map[string]int{}
	for i, s := range secret {
		if i < len(guess) && guess[i] == s {
			exact++
		} else {
			counts[s]++
		}
	}
	for i, g := range guess {
		if i < len(secret) && secret[i] == g {
			continue
		}
		if counts[g] > 0 {
			counts[g]--
			near++
		}
	}
	return exact, near
}

// Game plays one codemojex game, match after match, deterministically from
// its seed: the same name and seed always give the same events. It is not
// safe for concurrent use.
type Game struct {
	name    string
	rng     *rand.Rand
	match   int
	pending []Event
}

// NewGame returns the game name whose events follow from seed.
func NewGame(name string, seed int64) *Game {
	return &Game{name: name, rng: rand.New(rand.NewSource(seed))}
}

// Name returns the game's name.
// Next returns the game's next event. After game_over a new match starts,
// so an endless writer keeps producing plausible games.
func (g *Game) Next() Event {
	if len(g.pending) == 0 {
		g.match++
		g.pending = g.playMatch()
	}
	e := g.pending[0]
	g.pending = g.pending[1:]
	return e
}

// Play returns the first n events of the game name played from seed.
func Play(name string, seed int64, n int) []Event {
	g := NewGame(name, seed)
	out := make([]Event, n)
	for i := range out {
		out[i] = g.Next()
	}
	return out
}

type player struct {
	name, avatar string
	score        int
	present      bool
}

// matchState is one match being played: the players in join order.
type matchState struct {
	g       *Game
	palette []string
	players []*player
	out     []Event
}

func ev(kind string, kv ...string) Event {
	e := Event{Kind: kind, Fields: make([]Field, 0, len(kv)/2)}
	for i := 0; i+1 < len(kv); i += 2 {
		e.Fields = append(e.Fields, Field{kv[i], kv[i+1]})
	}
	return e
}

// playMatch writes a whole match at once: it is short (a few hundred
// events) and being done in one place keeps the plot readable.
func (g *Game) playMatch() []Event {
	r := g.rng
	m := &matchState{g: g}
	perm := r.Perm(len(emojiPool))
	for _, i := range perm[:PaletteSize] {
		m.palette = append(m.palette, emojiPool[i])
	}
	rounds := 3 + r.Intn(3)
	m.emit(ev(event.KindGameStarted,
		"title", titles[r.Intn(len(titles))]+" #"+strconv.Itoa(g.match),
		"rounds", strconv.Itoa(rounds),
		"code_length", strconv.Itoa(CodeLength),
		"palette", strings.Join(m.palette, "")))
	for range 2 + r.Intn(3) {
		m.join()
	}
	for round := 1; round <= rounds; round++ {
		if round > 1 && r.Float64() < 0.25 {
			m.join()
		}
		if round > 1 && r.Float64() < 0.2 && len(m.present()) > 2 {
			m.leave(m.present()[r.Intn(len(m.present()))])
		}
		m.playRound(round)
	}
	m.chat(winChat)
	m.emit(ev(event.KindGameOver, "winner", m.winner()))
	for _, p := range m.present() {
		m.leave(p)
	}
	return m.out
}

func (m *matchState) emit(e Event) { m.out = append(m.out, e) }

func (m *matchState) present() []*player {
	var out []*player
	for _, p := range m.players {
		if p.present {
			out = append(out, p)
		}
	}
	return out
}

// join adds a player whose name is not taken in this match.
func (m *matchState) join() {
	r := m.g.rng
	for {
		name := names[r.Intn(len(names))]
		if r.Float64() < 0.1 {
			name = hostileNames[r.Intn(len(hostileNames))]
		}
		taken := false
		for _, p := range m.players {
			taken = taken || p.name == name
		}
		if taken {
			continue // at most a handful of players: a free name is near
		}
		p := &player{name: name, avatar: avatars[r.Intn(len(avatars))], present: true}
		m.players = append(m.players, p)
		m.emit(ev(event.KindPlayerJoined, "player", p.name, "avatar", p.avatar))
		return
	}
}

func (m *matchState) leave(p *player) {
	p.present = false
	m.emit(ev(event.KindPlayerLeft, "player", p.name))
}

// chat lets a random present player say a random line of lines.
func (m *matchState) chat(lines []string) {
	ps := m.present()
	if len(ps) == 0 {
		return
	}
	r := m.g.rng
	m.emit(ev(event.KindChat, "player", ps[r.Intn(len(ps))].name, "text", lines[r.Intn(len(lines))]))
}

// playRound plays until someone cracks the code. The table learns from
// every answer: each guess keeps a growing share of the secret's symbols
// in place, so a round takes a plausible handful of guesses.
func (m *matchState) playRound(round int) {
	r := m.g.rng
	rs := strconv.Itoa(round)
	m.emit(ev(event.KindRoundStarted, "round", rs))
	secret := make([]string, CodeLength)
	for i := range secret {
		secret[i] = m.palette[r.Intn(len(m.palette))]
	}
	guesses := 0
	for turn := 0; ; turn++ {
		ps := m.present()
		p := ps[turn%len(ps)]
		guesses++
		know := 0.3 + 0.06*float64(guesses)
		guess := make([]string, CodeLength)
		for i := range guess {
			if r.Float64() < know || guesses >= 60 {
				guess[i] = secret[i]
			} else {
				guess[i] = m.palette[r.Intn(len(m.palette))]
			}
		}
		exact, near := Score(secret, guess)
		m.emit(ev(event.KindGuess, "player", p.name, "round", rs, "guess", strings.Join(guess, ""),
			"exact", strconv.Itoa(exact), "near", strconv.Itoa(near)))
		if exact == CodeLength {
			points := max(10, 120-10*guesses)
			p.score += points
			m.emit(ev(event.KindRoundWon, "player", p.name, "round", rs, "code", strings.Join(secret, ""),
				"guesses", strconv.Itoa(guesses), "points", strconv.Itoa(points)))
			if r.Float64() < 0.5 {
				m.chat(winChat)
			}
			return
		}
		if r.Float64() < 0.12 {
			m.chat(chatLines)
		}
	}
}

// winner is the top scorer of the match; a tie goes to who joined first.
func (m *matchState) winner() string {
	var best *player
	for _, p := range m.players {
		if best == nil || p.score > best.score {
			best = p
		}
	}
	if best == nil {
		return ""
	}
	return best.name
}
