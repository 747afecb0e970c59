package redistest

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestMoveSlotOntoACopy: a key of the moving slot that the target already
// holds (put there with RESTORE after ASKING, as a MIGRATE whose reply was
// lost leaves it) moves with REPLACE when its value is the source's, and
// stops the move, with both copies described, when it is not.
func TestMoveSlotOntoACopy(t *testing.T) {
	ctx := context.Background()
	c := MustStartCluster(t)
	cc := c.Client(t)
	for _, tt := range []struct {
		name, key string
		same      bool
	}{
		{"identical copy", "codemojex:{busy-same}:events", true},
		{"diverged copy", "codemojex:{busy-diff}:events", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, v := range []string{"1", "2"} {
				if err := cc.XAdd(ctx, &redis.XAddArgs{Stream: tt.key, Values: []string{"v", v}}).Err(); err != nil {
					t.Fatal(err)
				}
			}
			slot := c.Slot(t, tt.key)
			from := c.MasterOfSlot(t, slot)
			to := c.OtherMaster(t, from)
			dump, err := do(ctx, from, "dump", tt.key)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := do(ctx, to, "cluster", "setslot", slot, "importing", c.NodeID(t, from)); err != nil {
				t.Fatal(err)
			}
			if _, err := askDo(ctx, to, "restore", tt.key, 0, dump); err != nil {
				t.Fatalf("restore on the target: %v", err)
			}
			if !tt.same {
				if err := cc.XAdd(ctx, &redis.XAddArgs{Stream: tt.key, Values: []string{"v", "3"}}).Err(); err != nil {
					t.Fatal(err)
				}
			}

			moved, replaced, err := c.moveSlot(ctx, slot, to)
			if tt.same {
				if err != nil || moved != 1 || len(replaced) != 1 || replaced[0] != tt.key {
					t.Fatalf("moveSlot = %d, %v, %v; want 1 key moved with REPLACE", moved, replaced, err)
				}
				if err := c.waitStable(ctx, 0); err != nil {
					t.Fatal(err)
				}
				cc.ReloadState(ctx)
				if n, err := cc.XLen(ctx, tt.key).Result(); err != nil || n != 2 {
					t.Fatalf("after the move: XLEN %d, %v; want 2", n, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "BUSYKEY") || !strings.Contains(err.Error(), "differs") || !strings.Contains(err.Error(), "length=3") {
				t.Fatalf("moveSlot onto a diverged copy = %d, %v, %v; want a BUSYKEY error describing both copies", moved, replaced, err)
			}
			t.Log(err)
		})
	}
}
