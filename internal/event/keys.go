package event

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// LeaseKey returns the Redis key of the lease on a consumer name: one live
// process holds a consumer name of a group at a time.
func LeaseKey(group, consumer string) string {
	return "codemojex:feed:lease:{" + group + "}:" + consumer
}

// LeasesKey returns the Redis key of the index of group's leases: a sorted
// set of the consumer names whose holder wrote its lease, scored with the
// lease's expiry (unix ms, Redis's clock). The status lists the live
// renderers from it, at a cost that follows the renderers and not the
// keyspace, as a SCAN of the lease keys did. It shares the lease keys'
// {GROUP} hash tag (one master on a cluster); each is written by a script
// of its own, which a migration of that slot does not refuse (TRYAGAIN).
func LeasesKey(group string) string {
	return "codemojex:feed:leases:{" + group + "}"
}

// MaxGroupLen is the longest consumer group name CheckGroup takes, in
// bytes: a host's full name (up to 253), as docs/operations.md's one
// group per host suggests, fits.
const MaxGroupLen = 255

// groupRule says what a consumer group name may be.
const groupRule = "want 1 to 255 bytes of UTF-8 without whitespace, control characters, { or }"

// CheckGroup says what is wrong with a consumer group name, nil if
// nothing, as the whole sentence the renderer and feedctl both report for
// their -group (or $FEED_GROUP): the flag, the name, the fault and what a
// name may be. It is worded here once: each binary wrapped the fault in a
// sentence of its own, and the two differed. The group is the lease keys'
// and LeasesKey's hash tag {GROUP}: a { or } in it would move that tag,
// and with it the keys' slot on a cluster; whitespace and control
// characters make odd keys and log lines.
func CheckGroup(group string) error {
	if fault := groupFault(group); fault != nil {
		return fmt.Errorf("-group %q: %w; %s", group, fault, groupRule)
	}
	return nil
}

// groupFault is CheckGroup's fault alone.
func groupFault(group string) error {
	switch {
	case group == "":
		return errors.New("empty")
	case len(group) > MaxGroupLen:
		return fmt.Errorf("%d bytes, over %d", len(group), MaxGroupLen)
	case !utf8.ValidString(group):
		return errors.New("not UTF-8")
	}
	for _, r := range group {
		switch {
		case r == '{' || r == '}':
			return fmt.Errorf("has %q, which would change the hash tag {GROUP} of the group's keys", r)
		case unicode.IsSpace(r) || unicode.IsControl(r):
			return fmt.Errorf("has %q, whitespace or a control character", r)
		}
	}
	return nil
}
