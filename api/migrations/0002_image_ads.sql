-- Image ads, their immutable versions, and the job outbox that makes "insert the ad" and
-- "enqueue its job" one atomic step.

CREATE TABLE image_ads (
    seq                       INTEGER PRIMARY KEY AUTOINCREMENT,
    id                        TEXT NOT NULL UNIQUE,
    org_id                    TEXT NOT NULL REFERENCES organizations(id),
    brand_id                  TEXT NOT NULL,
    product_id                TEXT NOT NULL,
    audience_id               TEXT NOT NULL,
    product_variant_id        TEXT,
    design_template_id        TEXT,
    reference_ad_url          TEXT NOT NULL,
    prompt                    TEXT,
    options                   TEXT,
    editable                  INTEGER NOT NULL,
    sku_code                  TEXT NOT NULL,
    price_cents               INTEGER NOT NULL,
    status                    TEXT NOT NULL,          -- processing, completed, failed
    progress                  TEXT,                   -- JSON {step, message, percentage}
    image_url                 TEXT,
    width                     INTEGER,
    height                    INTEGER,
    current_json_tree         TEXT,
    current_version           INTEGER NOT NULL DEFAULT 1,
    figma_render_url          TEXT,
    initial_figma_render_url  TEXT,
    error_code                TEXT,
    error_message             TEXT,
    duration_ms               INTEGER,
    batch_id                  TEXT,
    charged_at                TEXT,
    job                       TEXT NOT NULL,          -- JSON of the job of the current version (for resume)
    search_name               TEXT NOT NULL,          -- lower-cased product name at creation
    created_at                TEXT NOT NULL,
    completed_at              TEXT,
    updated_at                TEXT NOT NULL,
    deleted_at                TEXT
);
CREATE INDEX image_ads_org ON image_ads(org_id, seq);
CREATE INDEX image_ads_status ON image_ads(status);

CREATE TABLE image_ad_versions (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    ad_id           TEXT NOT NULL REFERENCES image_ads(id),
    org_id          TEXT NOT NULL,
    version_number  INTEGER NOT NULL,
    json_tree       TEXT NOT NULL,
    image_url       TEXT,
    width           INTEGER,
    height          INTEGER,
    status          TEXT NOT NULL,                -- processing, completed, failed
    error_code      TEXT,
    error_message   TEXT,
    created_at      TEXT NOT NULL,
    completed_at    TEXT,
    UNIQUE (ad_id, version_number)
);

CREATE TABLE job_outbox (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id      TEXT NOT NULL,
    payload     TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
