package gamesim

import "strings"

// emojiPool holds single-code-point emoji, so that a palette, a code or a
// guess is a plain concatenation that event.SplitEmoji takes apart again.
var emojiPool = []string{
	"🍎", "🍌", "🍇", "🍉", "🍒", "🍋", "🥝", "🍑", "🍍", "🥥",
	"🐶", "🐱", "🦊", "🐼", "🐸", "🐵", "🦁", "🐯", "🐙", "🦄",
	"⭐", "🌙", "🔥", "💎", "🎲", "🎯", "🚀", "🌈",
}

// avatars are the players' faces: one emoji each.
var avatars = []string{
	"😀", "😎", "🤖", "👻", "🐧", "🦉", "🐢", "🦖", "👽", "🧙", "🐝", "🦀",
}

// names are the players.
var names = []string{
	"ada", "bob", "chloé", "dmitri", "eve", "fatima", "gus", "hana",
	"ivan", "jun", "kofi", "lena", "mo", "nadia", "oscar", "priya",
	"李雷", "Zoë", "O'Brien",
}

// hostileNames join now and then: markup, quotes, an RTL override and SQL
// must all reach the page as text.
var hostileNames = []string{
	`"quotes"`, "<b>mallory</b>", "\u202Etrudy", "Robert'); DROP TABLE events;--",
}

// titles name the matches; one carries markup on purpose.
var titles = []string{
	"Friday fruit frenzy", "Zoo crackers", "Late night codes", "Emoji rumble",
	"Lunch break league", "Cosmic combos", `<i>Code</i> & "Cheese"`, "Mañana masters",
}

// chatLines are what players say. Roughly a third look hostile but are
// valid: they must be stored and shown as plain text, never interpreted.
var chatLines = []string{
	"gl hf", "so close 😅", "who picked 🍌🍌🍌🍌?", "nice one!", "brb",
	"I had it on the tip of my tongue", "that was a lucky guess", "🔥🔥🔥",
	"one more round?", "how is that near=3 😭", "lol", "gg",
	"<script>alert(1)</script>",
	`"quoted" & 'single' </li><li>injected`,
	"\u202Egnp.exe",
	"<img src=x onerror=alert(document.cookie)>",
	"{{.}} ${7*7} {{7*7}} <%= 7*7 %>",
	"line one\nline two",
	"zero\u200Bwidth\u200Bspaces",
	"e\u0301\u0301\u0301 combining",
	"👨‍👩‍👧‍👦 family emoji",
	strings.Repeat("long ", 56), // exactly 280 characters: the limit
}

// winChat is what the table says when a round is won.
var winChat = []string{"gg", "well played", "🎉🎉", "how?!", "next round is mine"}
