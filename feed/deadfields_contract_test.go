package feed_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/codemojex/feed/feed"
)

// TestDeadFieldsAsContracted holds the dead letter's own fields that
// docs/contracts.md ("Dead letters") and docs/operations.md name to the
// ones the feed writes, both ways: a field added or renamed on one side
// alone fails here.
func TestDeadFieldsAsContracted(t *testing.T) {
	code := map[string]bool{
		feed.DeadReason: true, feed.DeadAttempts: true, feed.DeadConsumer: true,
		feed.DeadStreamID: true, feed.DeadAt: true, feed.DeadTruncated: true,
		feed.DeadDropped: true, feed.DeadFieldPrefix: true,
	}
	field := regexp.MustCompile("`(dead_[a-z_]+:?)`")
	for _, f := range []string{"../docs/contracts.md", "../docs/operations.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		named := map[string]bool{}
		for _, m := range field.FindAllStringSubmatch(string(b), -1) {
			named[m[1]] = true
			if !code[m[1]] {
				t.Errorf("%s names dead letter field %s, which the feed does not write", f, m[1])
			}
		}
		for c := range code {
			if !named[c] {
				t.Errorf("the feed writes dead letter field %s; %s does not name it", c, f)
			}
		}
	}
}
