package bench

import "fmt"

// Audit is what the clients' line frames say of the delivery contract of
// docs/contracts.md, "Websocket": a socket gets every line of its game
// with a seq above its cursor, in seq order, once each. A benchmark's
// figures count only if they were measured with it kept, so each
// renderer round checks every client that kept its connection (a client
// dropped for being slow resumes elsewhere, by contract, and is counted
// apart), over every line frame it read, the backfill's included.
type Audit struct {
	Clients int // clients checked: those that kept their connection
	Lines   int // line frames they read
	// Missing is the lines written in the measured window to a client's
	// game that the client did not get; Doubled the line frames a client
	// got again (its EVT id seen before on the same socket); OutOfOrder
	// the others whose seq was not above every seq the client had before.
	Missing, Doubled, OutOfOrder int
	First                        string // the first breach, for the log
}

// Kept reports whether no client saw a breach.
func (a Audit) Kept() bool { return a.Missing == 0 && a.Doubled == 0 && a.OutOfOrder == 0 }

func (a Audit) String() string {
	s := fmt.Sprintf("%d clients, %d line frames: %d missing, %d doubled, %d out of seq order",
		a.Clients, a.Lines, a.Missing, a.Doubled, a.OutOfOrder)
	if a.First != "" {
		s += "; first: " + a.First
	}
	return s
}

// plus pools two rounds' audits.
func (a Audit) plus(o Audit) Audit {
	first := a.First
	if first == "" {
		first = o.First
	}
	return Audit{Clients: a.Clients + o.Clients, Lines: a.Lines + o.Lines,
		Missing: a.Missing + o.Missing, Doubled: a.Doubled + o.Doubled, OutOfOrder: a.OutOfOrder + o.OutOfOrder,
		First: first}
}

// auditDeliveries checks ds, the line frames of n clients in the order
// each client read them, where client i watches the game i mod the games
// of w (as Connect spreads them) and the clients of lost lost their
// connection, against the lines w wrote since its last Reset.
func auditDeliveries(w *Writer, n int, lost []int, ds []Delivery) Audit {
	var a Audit
	gone := make(map[int]bool, len(lost))
	for _, i := range lost {
		gone[i] = true
	}
	byClient := make([][]Delivery, n)
	for _, d := range ds {
		if d.Client >= 0 && d.Client < n {
			byClient[d.Client] = append(byClient[d.Client], d)
		}
	}
	window := w.sentSince()
	sent := w.perGame(window)
	breach := func(format string, args ...any) {
		if a.First == "" {
			a.First = fmt.Sprintf(format, args...)
		}
	}
	for i, got := range byClient {
		if gone[i] {
			continue
		}
		a.Clients++
		game := w.games[i%len(w.games)]
		seen := make(map[string]bool, len(got))
		var last int64
		inWindow := 0
		for _, d := range got {
			a.Lines++
			switch {
			case seen[d.ID]:
				a.Doubled++
				breach("client %d (%s) got %s (seq %d) twice", i, game, d.ID, d.Seq)
				continue
			case d.Seq <= last:
				a.OutOfOrder++
				breach("client %d (%s) got %s at seq %d after seq %d", i, game, d.ID, d.Seq, last)
			}
			seen[d.ID] = true
			last = max(last, d.Seq)
			if _, ok := window[d.ID]; ok {
				inWindow++
			}
		}
		if g := i % len(w.games); inWindow < sent[g] {
			a.Missing += sent[g] - inWindow
			breach("client %d (%s) got %d of the %d lines written to its game", i, game, inWindow, sent[g])
		}
	}
	return a
}

// auditRow is the row that says a benchmark's line frames kept the
// delivery contract: what ran, and the audit of its renderer's rounds.
func auditRow(bench, what string, a Audit) Row {
	return Row{Bench: bench,
		Metric: what + ": each client's line frames against docs/contracts.md (every line of the window, in seq order, once)",
		Value:  a.String(),
		Target: "none missing, doubled or out of order", Met: verdict(a.Clients > 0 && a.Kept())}
}
