package main

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codemojex/feed/internal/testkit/redistest"
)

// TestKeyMarkMatchesScript: the plan reads a key's mark with keyMark and
// the deletion compares it in keyMarkScript; the two must agree on a key
// left alone, of every type, or prune would keep every game's streams,
// and must not once something was added to it.
func TestKeyMarkMatchesScript(t *testing.T) {
	s := redistest.MustStart(t)
	rdb := s.Client(t)
	ctx := context.Background()
	g := &global{rdb: rdb}
	for _, tc := range []struct {
		key      string
		make     func() error
		addSince func() error
	}{
		{key: "st",
			make:     func() error { return rdb.XAdd(ctx, &redis.XAddArgs{Stream: "st", Values: []any{"a", "1"}}).Err() },
			addSince: func() error { return rdb.XAdd(ctx, &redis.XAddArgs{Stream: "st", Values: []any{"a", "2"}}).Err() }},
		{key: "zs",
			make: func() error {
				return rdb.ZAdd(ctx, "zs", redis.Z{Score: 1, Member: "1-0"}, redis.Z{Score: 3, Member: "3-0"}).Err()
			},
			addSince: func() error { return rdb.ZAdd(ctx, "zs", redis.Z{Score: 2, Member: "2-0"}).Err() }},
		{key: "str",
			make:     func() error { return rdb.Set(ctx, "str", "x", 0).Err() },
			addSince: func() error { return rdb.Del(ctx, "str").Err() }}, // then gone: nothing to keep
		{key: "missing",
			make:     func() error { return nil },
			addSince: func() error { return rdb.XAdd(ctx, &redis.XAddArgs{Stream: "missing", Values: []any{"a", "1"}}).Err() }},
	} {
		if err := tc.make(); err != nil {
			t.Fatal(err)
		}
		was, err := g.keyMark(ctx, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if err := tc.addSince(); err != nil {
			t.Fatal(err)
		}
		n, _ := rdb.Exists(ctx, tc.key).Result()
		ok, now, err := g.delIfUnchanged(ctx, tc.key, was)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 && ok {
			t.Errorf("%s: deleted, though changed since its mark %q (now %q)", tc.key, was, now)
		}
		if n == 1 {
			// Left alone since this mark: deleted.
			if was, err = g.keyMark(ctx, tc.key); err != nil {
				t.Fatal(err)
			}
			if ok, now, err := g.delIfUnchanged(ctx, tc.key, was); err != nil || !ok {
				t.Errorf("%s: not deleted with its mark %q (script read %q): %v", tc.key, was, now, err)
			}
		}
		if tc.key != "missing" && tc.key != "str" {
			if n, _ := rdb.Exists(ctx, tc.key).Result(); n != 0 {
				t.Errorf("%s: exists after its delete", tc.key)
			}
		}
	}
	// A string left alone is deleted too.
	if err := rdb.Set(ctx, "str", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	was, _ := g.keyMark(ctx, "str")
	if ok, now, err := g.delIfUnchanged(ctx, "str", was); err != nil || !ok {
		t.Errorf("str: not deleted with its mark %q (script read %q): %v", was, now, err)
	}
}
