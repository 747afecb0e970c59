-- 0002_meta: facts about the store file itself.
--
-- store_id names this file: seqs are its own, so a browser whose page came
-- from another host's store (or from this host before a rebuild) must not
-- resume with its seq here. It is random, made once when the file is new.
CREATE TABLE meta (
    key   TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

INSERT INTO meta (key, value) VALUES ('store_id', lower(hex(randomblob(8))));
