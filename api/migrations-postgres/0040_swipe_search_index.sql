-- Change markers for the per-process swipe-file search index (api/src/swipe/index.rs).
--
-- Every insert of a design, every change of a column the index keeps (owner, status,
-- archived, industry, ad format, aspect ratio) and every vector write stamps the design's
-- `rev` with the next value of one counter. Writes are serialised (one writer), so a reader
-- that has seen the counter at N has seen every change up to N: before each search an API
-- node reads the counter (one row) and, when it moved, the designs with `rev` above the last
-- value it applied (an indexed range). Deletions leave a row in `swipe_file_deletions`.

CREATE TABLE swipe_file_revision (
    id   BIGINT PRIMARY KEY CHECK (id = 1),
    rev  BIGINT NOT NULL
);

ALTER TABLE swipe_files ADD COLUMN rev BIGINT NOT NULL DEFAULT 0;
UPDATE swipe_files SET rev = seq;
INSERT INTO swipe_file_revision (id, rev) SELECT 1, coalesce(max(seq), 0) FROM swipe_files;
CREATE INDEX swipe_files_rev ON swipe_files(rev);

CREATE TABLE swipe_file_deletions (
    rev            BIGINT PRIMARY KEY,
    swipe_file_id  TEXT COLLATE "C" NOT NULL
);

-- SQLite's six triggers become plpgsql. The design's own row is stamped in BEFORE triggers
-- (NEW.rev), which has the effect of SQLite's AFTER trigger updating that row, without a
-- second write of it; vector writes and deletions stamp in AFTER triggers as SQLite does.
-- The counter's row lock and the store's write lock (one writer across all API nodes) keep
-- the stamps in commit order.

-- The next value of the counter.
CREATE FUNCTION swipe_file_next_rev() RETURNS bigint LANGUAGE sql AS $$
    UPDATE swipe_file_revision SET rev = rev + 1 WHERE id = 1 RETURNING rev;
$$;

CREATE FUNCTION swipe_files_rev_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.rev := swipe_file_next_rev();
    RETURN NEW;
END;
$$;

CREATE FUNCTION swipe_files_rev_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO swipe_file_deletions (rev, swipe_file_id) VALUES (swipe_file_next_rev(), OLD.id);
    RETURN NULL;
END;
$$;

CREATE FUNCTION swipe_file_vectors_rev_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE swipe_files SET rev = swipe_file_next_rev()
        WHERE id = CASE WHEN TG_OP = 'DELETE' THEN OLD.swipe_file_id ELSE NEW.swipe_file_id END;
    RETURN NULL;
END;
$$;

CREATE TRIGGER swipe_files_rev_insert BEFORE INSERT ON swipe_files
    FOR EACH ROW EXECUTE FUNCTION swipe_files_rev_stamp();

CREATE TRIGGER swipe_files_rev_update
BEFORE UPDATE OF org_id, data_source_id, status, archived_at, industry, ad_format, aspect_ratio ON swipe_files
    FOR EACH ROW EXECUTE FUNCTION swipe_files_rev_stamp();

CREATE TRIGGER swipe_files_rev_delete AFTER DELETE ON swipe_files
    FOR EACH ROW EXECUTE FUNCTION swipe_files_rev_deleted();

CREATE TRIGGER swipe_file_vectors_rev_insert AFTER INSERT ON swipe_file_vectors
    FOR EACH ROW EXECUTE FUNCTION swipe_file_vectors_rev_stamp();

CREATE TRIGGER swipe_file_vectors_rev_update AFTER UPDATE ON swipe_file_vectors
    FOR EACH ROW EXECUTE FUNCTION swipe_file_vectors_rev_stamp();

CREATE TRIGGER swipe_file_vectors_rev_delete AFTER DELETE ON swipe_file_vectors
    FOR EACH ROW EXECUTE FUNCTION swipe_file_vectors_rev_stamp();
