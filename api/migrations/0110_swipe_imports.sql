-- Bulk imports into a data source (`adforge admin data-source import`, issue 25): one row
-- per import (a source and the folder or manifest it reads, so running the same command
-- again resumes it), and one row per item once it was attempted: `queued` while its
-- design's ingest job is queued or running, then `ready` or `failed` (with the reason),
-- set by the event applier in the transaction that applies the ingest.
CREATE TABLE swipe_imports (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    data_source_id  TEXT NOT NULL REFERENCES data_sources(id),
    -- `folder:/abs/path` or `manifest:/abs/path`.
    origin          TEXT NOT NULL,
    total           INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    UNIQUE (data_source_id, origin)
);

CREATE TABLE swipe_import_items (
    import_id      TEXT NOT NULL REFERENCES swipe_imports(id),
    -- The item's place: its line in the manifest, or its file's place in the sorted folder.
    item           INTEGER NOT NULL,
    -- The file's path or the URL.
    locator        TEXT NOT NULL,
    is_url         INTEGER NOT NULL DEFAULT 0,
    industry       TEXT,
    ad_format      TEXT,
    caption        TEXT,
    state          TEXT NOT NULL,
    swipe_file_id  TEXT,
    error          TEXT,
    updated_at     TEXT NOT NULL,
    PRIMARY KEY (import_id, item)
);
CREATE INDEX swipe_import_items_file ON swipe_import_items(swipe_file_id);
CREATE INDEX swipe_import_items_state ON swipe_import_items(import_id, state);
