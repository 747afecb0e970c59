-- 0001_init: the timeline, per-game state and the scoreboard.
--
-- Foreign keys to games are deferred: Upsert inserts the line first (its
-- verdict decides whether anything else happens) and then creates or bumps
-- the games row in the same transaction.
--
-- events.seq is the store's own insertion order (the browsers' resume
-- cursor); evt_id is the writer's id and the dedup key. AUTOINCREMENT keeps
-- seq from ever being reused and, because write transactions are serialised,
-- makes it increase in commit order across processes.
CREATE TABLE events (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    evt_id    TEXT    NOT NULL UNIQUE,
    game      TEXT    NOT NULL REFERENCES games (name) DEFERRABLE INITIALLY DEFERRED,
    kind      TEXT    NOT NULL,
    payload   TEXT    NOT NULL,  -- the fields but id, a JSON object with sorted keys
    html      TEXT    NOT NULL,
    stream_id TEXT    NOT NULL DEFAULT '',
    renderer  TEXT    NOT NULL DEFAULT '',
    attempts  INTEGER NOT NULL DEFAULT 0,
    at        INTEGER,          -- writer's clock, unix ns; NULL when absent
    stored_at INTEGER NOT NULL  -- store's clock, unix ns
);

-- Page and Before: a game's lines by EVT id. Timeline: the same, ascending.
CREATE INDEX events_game_evt ON events (game, evt_id);
-- After: a game's lines after a seq (websocket resume).
CREATE INDEX events_game_seq ON events (game, seq);

-- games holds newer-wins state in field groups; each group remembers the
-- EVT id it came from (*_evt) and is only overwritten by a greater one.
-- events and last_at are inserted-only bookkeeping.
CREATE TABLE games (
    name        TEXT    NOT NULL PRIMARY KEY,
    -- group "info", from game_started
    title       TEXT    NOT NULL DEFAULT '',
    rounds      INTEGER NOT NULL DEFAULT 0,
    code_len    INTEGER NOT NULL DEFAULT 0,
    palette     TEXT    NOT NULL DEFAULT '',
    info_evt    TEXT    NOT NULL DEFAULT '',
    -- group "status", from game_started, round_started, game_over
    status      TEXT    NOT NULL DEFAULT 'waiting',
    winner      TEXT    NOT NULL DEFAULT '',
    status_evt  TEXT    NOT NULL DEFAULT '',
    -- group "round", from round_started and round_won
    round       INTEGER NOT NULL DEFAULT 0,
    round_evt   TEXT    NOT NULL DEFAULT '',
    -- inserted-only
    events      INTEGER NOT NULL DEFAULT 0,
    last_evt_id TEXT    NOT NULL DEFAULT '',
    last_at     INTEGER NOT NULL DEFAULT 0   -- store's clock of the latest insert, unix ns
) WITHOUT ROWID;

-- Games list: most recently active first.
CREATE INDEX games_last_at ON games (last_at);

-- players: avatar, presence and last guess are newer-wins (each with the
-- EVT id it came from); score, wins and guesses are inserted-only sums.
CREATE TABLE players (
    game        TEXT    NOT NULL REFERENCES games (name) DEFERRABLE INITIALLY DEFERRED,
    name        TEXT    NOT NULL,
    avatar      TEXT    NOT NULL DEFAULT '',
    avatar_evt  TEXT    NOT NULL DEFAULT '',
    present     INTEGER NOT NULL DEFAULT 0,
    present_evt TEXT    NOT NULL DEFAULT '',
    last_guess  TEXT    NOT NULL DEFAULT '',
    last_exact  INTEGER NOT NULL DEFAULT 0,
    last_near   INTEGER NOT NULL DEFAULT 0,
    guess_evt   TEXT    NOT NULL DEFAULT '',
    score       INTEGER NOT NULL DEFAULT 0,
    wins        INTEGER NOT NULL DEFAULT 0,
    guesses     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (game, name)
) WITHOUT ROWID;
