package feed

// KthLargest is kthLargest, for the external tests.
var KthLargest = kthLargest

// WorkSetOps runs ops on a new work set and returns what each "=" read:
// "+k" adds the state of key k (one per key, made on first use), "!k"
// adds a new state for k in place of the old one, "-k" removes k, and "="
// lists the members' keys in the set's order.
func WorkSetOps(ops []string) [][]string {
	w := newWorkSet()
	states := map[string]*streamState{}
	var out [][]string
	for _, op := range ops {
		k := op[1:]
		switch op[0] {
		case '+':
			if states[k] == nil {
				states[k] = &streamState{key: k}
			}
			w.add(states[k])
		case '!':
			states[k] = &streamState{key: k}
			w.add(states[k])
		case '-':
			w.remove(k)
		case '=':
			var keys []string
			for _, st := range w.all() {
				keys = append(keys, st.key)
			}
			out = append(out, keys)
		}
	}
	return out
}
