-- The swipe file: service-managed data sources and each organisation's subscriptions to them,
-- swipe files (own uploads belong to an organisation, managed designs to a data source),
-- their vectors, and design packs with their items.

CREATE TABLE data_sources (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    -- 1 for the default collection: every organisation is subscribed unless it turned it off.
    is_default  INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL
);

-- One row per organisation that toggled a source; no row means "subscribed iff is_default".
CREATE TABLE data_source_subscriptions (
    org_id      TEXT NOT NULL REFERENCES organizations(id),
    source_id   TEXT NOT NULL REFERENCES data_sources(id),
    active      INTEGER NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (org_id, source_id)
);

CREATE TABLE swipe_files (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    org_id          TEXT REFERENCES organizations(id),
    data_source_id  TEXT REFERENCES data_sources(id),
    source          TEXT NOT NULL,          -- upload, import, studio_concept, svc_managed
    blob_key        TEXT NOT NULL,
    thumb_key       TEXT,
    width           INTEGER,
    height          INTEGER,
    aspect_ratio    TEXT,
    industry        TEXT,
    ad_format       TEXT,
    status          TEXT NOT NULL,          -- processing, ready, failed
    error           TEXT,
    caption         TEXT,
    labels          TEXT,                   -- JSON [[label, probability], ...]
    ocr_text        TEXT,
    archived_at     TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    CHECK ((org_id IS NULL) <> (data_source_id IS NULL))
);
CREATE INDEX swipe_files_org ON swipe_files(org_id, seq);
CREATE INDEX swipe_files_source ON swipe_files(data_source_id, seq);

-- Vectors, int8-quantised: 4 bytes little-endian f32 scale, then `dim` signed bytes.
-- kind: image (look-alikes) or text (the caption, matched by text queries).
CREATE TABLE swipe_file_vectors (
    swipe_file_id  TEXT NOT NULL REFERENCES swipe_files(id),
    kind           TEXT NOT NULL,
    model_id       TEXT NOT NULL,
    dim            INTEGER NOT NULL,
    vector         BLOB NOT NULL,
    PRIMARY KEY (swipe_file_id, kind)
);

CREATE TABLE design_packs (
    seq                  INTEGER PRIMARY KEY AUTOINCREMENT,
    id                   TEXT NOT NULL UNIQUE,
    org_id               TEXT REFERENCES organizations(id),
    data_source_id       TEXT REFERENCES data_sources(id),  -- service-curated packs
    title                TEXT NOT NULL,
    description          TEXT,
    created_by_profile   TEXT,
    created_by_name      TEXT,
    archived_at          TEXT,
    created_at           TEXT NOT NULL,
    updated_at           TEXT NOT NULL,
    CHECK ((org_id IS NULL) <> (data_source_id IS NULL))
);
CREATE INDEX design_packs_org ON design_packs(org_id, updated_at);

CREATE TABLE design_pack_items (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    pack_id        TEXT NOT NULL REFERENCES design_packs(id) ON DELETE CASCADE,
    swipe_file_id  TEXT NOT NULL REFERENCES swipe_files(id),
    added_at       TEXT NOT NULL,
    UNIQUE (pack_id, swipe_file_id)
);
CREATE INDEX design_pack_items_file ON design_pack_items(swipe_file_id);
