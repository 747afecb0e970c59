package event

import "io"

// NewMinterFrom returns a Minter whose random part comes from entropy, so
// that a test can hand it an entropy that overflows at will (some 2^48 ids
// in one millisecond, out of reach of a test otherwise).
func NewMinterFrom(entropy io.Reader) *Minter {
	return &Minter{entropy: entropy}
}
