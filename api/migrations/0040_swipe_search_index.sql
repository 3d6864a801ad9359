-- Change markers for the per-process swipe-file search index (api/src/swipe/index.rs).
--
-- Every insert of a design, every change of a column the index keeps (owner, status,
-- archived, industry, ad format, aspect ratio) and every vector write stamps the design's
-- `rev` with the next value of one counter. Writes are serialised (one writer), so a reader
-- that has seen the counter at N has seen every change up to N: before each search an API
-- node reads the counter (one row) and, when it moved, the designs with `rev` above the last
-- value it applied (an indexed range). Deletions leave a row in `swipe_file_deletions`.

CREATE TABLE swipe_file_revision (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    rev  INTEGER NOT NULL
);

ALTER TABLE swipe_files ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
UPDATE swipe_files SET rev = seq;
INSERT INTO swipe_file_revision (id, rev) SELECT 1, coalesce(max(seq), 0) FROM swipe_files;
CREATE INDEX swipe_files_rev ON swipe_files(rev);

CREATE TABLE swipe_file_deletions (
    rev            INTEGER PRIMARY KEY,
    swipe_file_id  TEXT NOT NULL
);

CREATE TRIGGER swipe_files_rev_insert AFTER INSERT ON swipe_files BEGIN
    UPDATE swipe_file_revision SET rev = rev + 1 WHERE id = 1;
    UPDATE swipe_files SET rev = (SELECT rev FROM swipe_file_revision WHERE id = 1) WHERE seq = NEW.seq;
END;

CREATE TRIGGER swipe_files_rev_update
AFTER UPDATE OF org_id, data_source_id, status, archived_at, industry, ad_format, aspect_ratio ON swipe_files BEGIN
    UPDATE swipe_file_revision SET rev = rev + 1 WHERE id = 1;
    UPDATE swipe_files SET rev = (SELECT rev FROM swipe_file_revision WHERE id = 1) WHERE seq = NEW.seq;
END;

CREATE TRIGGER swipe_files_rev_delete AFTER DELETE ON swipe_files BEGIN
    UPDATE swipe_file_revision SET rev = rev + 1 WHERE id = 1;
    INSERT INTO swipe_file_deletions (rev, swipe_file_id)
        VALUES ((SELECT rev FROM swipe_file_revision WHERE id = 1), OLD.id);
END;

CREATE TRIGGER swipe_file_vectors_rev_insert AFTER INSERT ON swipe_file_vectors BEGIN
    UPDATE swipe_file_revision SET rev = rev + 1 WHERE id = 1;
    UPDATE swipe_files SET rev = (SELECT rev FROM swipe_file_revision WHERE id = 1) WHERE id = NEW.swipe_file_id;
END;

CREATE TRIGGER swipe_file_vectors_rev_update AFTER UPDATE ON swipe_file_vectors BEGIN
    UPDATE swipe_file_revision SET rev = rev + 1 WHERE id = 1;
    UPDATE swipe_files SET rev = (SELECT rev FROM swipe_file_revision WHERE id = 1) WHERE id = NEW.swipe_file_id;
END;

CREATE TRIGGER swipe_file_vectors_rev_delete AFTER DELETE ON swipe_file_vectors BEGIN
    UPDATE swipe_file_revision SET rev = rev + 1 WHERE id = 1;
    UPDATE swipe_files SET rev = (SELECT rev FROM swipe_file_revision WHERE id = 1) WHERE id = OLD.swipe_file_id;
END;
