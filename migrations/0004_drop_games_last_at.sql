-- 0004_drop_games_last_at: games.last_at moves on every stored line, and its
-- index moved with it: a delete and an insert in games_last_at, one or two
-- more WAL pages in every commit (docs/benchmarks.md, "the store's low-rate
-- cost"). Games and Ended read every games row anyway and sort them in
-- memory, which for the few thousand games a store holds costs less than
-- the index did on each commit.
DROP INDEX games_last_at;
