package event

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
