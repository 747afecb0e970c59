package event

// Status is a game's lifecycle state, derived from its events: a game is
// waiting until game_started, playing until game_over, then over. Stores keep
// it as text; a value outside the constants (written by a newer producer) is
// kept as is and shown as unknown.
type Status string

// The game statuses, in lifecycle order.
const (
	StatusWaiting Status = "waiting" // no game_started seen yet
	StatusPlaying Status = "playing" // game_started or round_started seen
	StatusOver    Status = "over"    // game_over seen
)
