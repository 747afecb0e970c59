package gamesim_test

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/event"
	"github.com/codemojex/feed/internal/gamesim"
)

func TestScore(t *testing.T) {
	tests := []struct {
		secret, guess string
		exact, near   int
	}{
		{"🍎🍌🍇🍉", "🍎🍌🍇🍉", 4, 0},
		{"🍎🍌🍇🍉", "🍉🍇🍌🍎", 0, 4},
		{"🍎🍎🍌🍌", "🍌🍌🍎🍎", 0, 4},
		{"🍎🍎🍌🍌", "🍎🍌🍎🍇", 1, 2},
		{"🍎🍌🍇🍉", "🐶🐱🦊🐼", 0, 0},
		{"🍎🍎🍎🍌", "🍎🍌🍌🍌", 2, 0},
		{"🍎🍌🍇🍉", "🍎🍎🍎🍎", 1, 0},
	}
	for _, tt := range tests {
		exact, near := gamesim.Score(event.SplitEmoji(tt.secret), event.SplitEmoji(tt.guess))
		if exact != tt.exact || near != tt.near {
			t.Errorf("Score(%s, %s) = %d exact %d near; want %d, %d", tt.secret, tt.guess, exact, near, tt.exact, tt.near)
		}
	}
}

func FuzzScore(f *testing.F) {
	f.Add("🍎🍌🍇🍉", "🍉🍇🍌🍎")
	f.Add("abcd", "abca")
	f.Add("", "x")
	f.Fuzz(func(t *testing.T, a, b string) {
		sa, sb := strings.Split(a, ""), strings.Split(b, "")
		exact, near := gamesim.Score(sa, sb)
		if exact < 0 || near < 0 || exact+near > min(len(sa), len(sb)) {
			t.Fatalf("Score(%q, %q) = %d, %d: out of range", a, b, exact, near)
		}
		if e2, n2 := gamesim.Score(sb, sa); e2 != exact || n2 != near {
			t.Fatalf("Score is not symmetric: %d,%d vs %d,%d", exact, near, e2, n2)
		}
		if e, n := gamesim.Score(sa, sa); e != len(sa) || n != 0 {
			t.Fatalf("Score(a, a) = %d, %d; want %d, 0", e, n, len(sa))
		}
	})
}

func TestPlayIsDeterministic(t *testing.T) {
	a := gamesim.Play("game-1", 42, 3000)
	b := gamesim.Play("game-1", 42, 3000)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same name and seed gave different events")
	}
	c := gamesim.Play("game-1", 43, 3000)
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds gave the same events")
	}
	// A longer play starts with the shorter one.
	if d := gamesim.Play("game-1", 42, 100); !reflect.DeepEqual(d, a[:100]) {
		t.Fatal("Play(n) is not a prefix of Play(m > n)")
	}
}

// TestPlayIsPlausible replays the rules of codemojex over many matches:
// every event is valid, guesses are scored right, wins crack the code, only
// present players act, and the winner is the top scorer.
func TestPlayIsPlausible(t *testing.T) {
	for _, seed := range []int64{1, 2, 3, 99} {
		evs := gamesim.Play("game-"+strconv.FormatInt(seed, 10), seed, 5000)
		var (
			matches, wins, chats, hostile int
			present                       map[string]bool
			scores                        map[string]int
			order                         []string
			palette                       map[string]bool
			round                         int
			secretGuesses                 int
			lastGuess                     string
		)
		at := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
		for i, e := range evs {
			p := e.Payload(at)
			if !event.Known(e.Kind) {
				t.Fatalf("seed %d event %d: unknown kind %q", seed, i, e.Kind)
			}
			if err := event.Validate(e.Kind, p); err != nil {
				t.Fatalf("seed %d event %d: %v", seed, i, err)
			}
			if p["at"] != "2026-01-02T03:04:05.006Z" {
				t.Fatalf("at = %q", p["at"])
			}
			who := e.Get("player")
			if who != "" && e.Kind != event.KindPlayerJoined && !present[who] {
				t.Fatalf("seed %d event %d: %s by %q who is not at the table", seed, i, e.Kind, who)
			}
			switch e.Kind {
			case event.KindGameStarted:
				matches++
				present, scores, order, palette = map[string]bool{}, map[string]int{}, nil, map[string]bool{}
				for _, s := range event.SplitEmoji(e.Get("palette")) {
					palette[s] = true
				}
				if len(palette) != gamesim.PaletteSize || e.Get("code_length") != "4" {
					t.Fatalf("seed %d event %d: palette %q code_length %s", seed, i, e.Get("palette"), e.Get("code_length"))
				}
			case event.KindPlayerJoined:
				if present[who] {
					t.Fatalf("seed %d event %d: %q joined twice", seed, i, who)
				}
				present[who] = true
				order = append(order, who)
			case event.KindPlayerLeft:
				delete(present, who)
			case event.KindRoundStarted:
				round++
				if e.Get("round") == "1" {
					round = 1
				}
				if e.Get("round") != strconv.Itoa(round) {
					t.Fatalf("seed %d event %d: round %s, want %d", seed, i, e.Get("round"), round)
				}
				secretGuesses = 0
			case event.KindGuess:
				secretGuesses++
				lastGuess = e.Get("guess")
				for _, s := range event.SplitEmoji(lastGuess) {
					if !palette[s] {
						t.Fatalf("seed %d event %d: %s not in the palette", seed, i, s)
					}
				}
			case event.KindRoundWon:
				wins++
				code := e.Get("code")
				if code != lastGuess {
					t.Fatalf("seed %d event %d: won with %s, last guess %s", seed, i, code, lastGuess)
				}
				if e.Get("guesses") != strconv.Itoa(secretGuesses) {
					t.Fatalf("seed %d event %d: guesses %s, counted %d", seed, i, e.Get("guesses"), secretGuesses)
				}
				pts, _ := strconv.Atoi(e.Get("points"))
				scores[who] += pts
				// Every guess of the round must score right against the code.
				for j := i - 1; j >= 0 && evs[j].Kind != event.KindRoundStarted; j-- {
					if evs[j].Kind != event.KindGuess {
						continue
					}
					ex, ne := gamesim.Score(event.SplitEmoji(code), event.SplitEmoji(evs[j].Get("guess")))
					if evs[j].Get("exact") != strconv.Itoa(ex) || evs[j].Get("near") != strconv.Itoa(ne) {
						t.Fatalf("seed %d event %d: guess %s against %s says %s/%s, want %d/%d",
							seed, j, evs[j].Get("guess"), code, evs[j].Get("exact"), evs[j].Get("near"), ex, ne)
					}
				}
			case event.KindChat:
				chats++
				if strings.ContainsAny(e.Get("text"), "<>\"'\u202E") {
					hostile++
				}
			case event.KindGameOver:
				best, top := "", -1
				for _, name := range order {
					if scores[name] > top {
						best, top = name, scores[name]
					}
				}
				if e.Get("winner") != best {
					t.Fatalf("seed %d event %d: winner %q, top scorer %q", seed, i, e.Get("winner"), best)
				}
			}
		}
		if matches < 3 || wins < 3*matches || chats == 0 || hostile == 0 {
			t.Fatalf("seed %d: %d matches, %d wins, %d chats (%d hostile): not a plausible game", seed, matches, wins, chats, hostile)
		}
	}
}
