package logsample_test

import (
	"testing"
	"time"

	"github.com/codemojex/feed/internal/logsample"
)

// One line per key and period, each key on its own, and the first line
// after a period says how many were held back.
func TestAllow(t *testing.T) {
	s := logsample.New(time.Hour)
	if ok, n := s.Allow("a"); !ok || n != 0 {
		t.Fatalf("first a: %v %d, want true 0", ok, n)
	}
	for range 3 {
		if ok, _ := s.Allow("a"); ok {
			t.Fatal("a again within the period was let through")
		}
	}
	if ok, _ := s.Allow("b"); !ok {
		t.Fatal("b held back by a's period")
	}
	s = logsample.New(0)
	s.Allow("a")
	if ok, n := s.Allow("a"); !ok || n != 0 {
		t.Fatalf("a after its period: %v %d, want true 0", ok, n)
	}
}

// The count of held-back lines reaches the next line let through.
func TestAllowCountsHeld(t *testing.T) {
	s := logsample.New(50 * time.Millisecond)
	s.Allow("a")
	held := 0
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, n := s.Allow("a")
		if ok {
			if n != int64(held) {
				t.Fatalf("similar_unlogged %d, want %d", n, held)
			}
			return
		}
		held++
		if time.Now().After(deadline) {
			t.Fatal("a never let through again")
		}
	}
}
