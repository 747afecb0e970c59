package proc_test

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/codemojex/feed/internal/proc"
)

func TestPoll(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		cond    func(n int) (bool, error)
		wantErr error
	}{
		{"holds at once", func(int) (bool, error) { return true, nil }, nil},
		{"holds on the third look", func(n int) (bool, error) { return n >= 3, nil }, nil},
		{"never holds", func(int) (bool, error) { return false, nil }, proc.ErrTimeout},
		{"fails", func(n int) (bool, error) { return false, boom }, boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			_, err := proc.Poll(context.Background(), 50*time.Millisecond, "it", func() (bool, error) {
				n++
				return tt.cond(n)
			})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestStartKill(t *testing.T) {
	p, err := proc.Start(exec.Command("sleep", "60"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Exited() {
		t.Fatal("exited at once")
	}
	p.Kill()
	if !p.Exited() || p.Err() == nil {
		t.Fatalf("after Kill: exited %v, err %v; want exited with an error", p.Exited(), p.Err())
	}
}

// TestFreeAddr checks that the address it returns can be listened on.
func TestFreeAddr(t *testing.T) {
	addr, err := proc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on FreeAddr's %s: %v", addr, err)
	}
	l.Close()
}
