// Package bench measures the codemojex feed end to end against real parts:
// its own redis-server, real SQLite files, the real renderer binary and real
// websocket clients. cmd/feedbench drives it and prints one table.
//
// Every figure is taken in one run on one machine; throughput is also given
// as a ratio to a raw XREADGROUP + XACK loop over the same data, because the
// machine the table is made on is shared and its absolute speed drifts.
package bench
