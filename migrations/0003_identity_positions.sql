-- 0003_identity_positions: a line's identity is (game, EVT id), and the store
-- records how far it has got in each game's stream.
--
-- Two games may carry the same EVT id (ids are minted by each game's
-- server); before this migration the second one was silently dropped. The
-- events table is rebuilt with UNIQUE (game, evt_id) instead of UNIQUE
-- (evt_id); seqs are kept as they are (browsers resume by them), and the
-- AUTOINCREMENT counter moves with the table.
CREATE TABLE events_new (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    evt_id    TEXT    NOT NULL,
    game      TEXT    NOT NULL REFERENCES games (name) DEFERRABLE INITIALLY DEFERRED,
    kind      TEXT    NOT NULL,
    payload   TEXT    NOT NULL,  -- the fields but id, a JSON object with sorted keys
    html      TEXT    NOT NULL,
    stream_id TEXT    NOT NULL DEFAULT '',
    renderer  TEXT    NOT NULL DEFAULT '',
    attempts  INTEGER NOT NULL DEFAULT 0,
    at        INTEGER,          -- writer's clock, unix ns; NULL when absent
    stored_at INTEGER NOT NULL, -- store's clock, unix ns
    UNIQUE (game, evt_id)
);
INSERT INTO events_new (seq, evt_id, game, kind, payload, html, stream_id, renderer, attempts, at, stored_at)
    SELECT seq, evt_id, game, kind, payload, html, stream_id, renderer, attempts, at, stored_at FROM events;
-- The counter, not max(seq), is the highest seq ever handed out (the newest
-- lines may have been deleted since): carry it over, or seqs are reused.
DELETE FROM sqlite_sequence WHERE name = 'events_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'events_new', seq FROM sqlite_sequence WHERE name = 'events';
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
-- The unique (game, evt_id) index serves a game's lines by EVT id (Page,
-- Before, Timeline) as events_game_evt did.
CREATE INDEX events_game_seq ON events (game, seq);

-- positions: per game (one stream per game), the highest stream position
-- whose line this file has committed, written in the same transaction as
-- the lines. A store that is new or restored from an older copy is behind
-- its consumer group; the renderer catches it up from here (docs/store.md).
CREATE TABLE positions (
    game TEXT    NOT NULL PRIMARY KEY,
    ms   INTEGER NOT NULL,  -- stream id "ms-seq", split so it compares as numbers
    seq  INTEGER NOT NULL
) WITHOUT ROWID;
