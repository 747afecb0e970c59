package event

// LeaseKey returns the Redis key of the lease on a consumer name: one live
// process holds a consumer name of a group at a time.
func LeaseKey(group, consumer string) string {
	return "codemojex:feed:lease:{" + group + "}:" + consumer
}
