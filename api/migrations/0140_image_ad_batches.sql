-- Batches of image ads (issue 42): one row per POST /v1/image-ad-batches. Its ads carry its
-- id in image_ads.batch_id; counts, progress and the amount charged are read from them.
-- `status` is `processing` until the last ad ends, then `completed`, `failed` (every ad
-- failed) or `cancelled` (cancel was asked), set once in the transaction that ends that ad.
CREATE TABLE image_ad_batches (
    seq                 INTEGER PRIMARY KEY AUTOINCREMENT,
    id                  TEXT NOT NULL UNIQUE,
    org_id              TEXT NOT NULL REFERENCES organizations(id),
    brand_id            TEXT,                   -- set when the batch named a brand
    request             TEXT NOT NULL,          -- JSON of the body as accepted
    editable            INTEGER NOT NULL,
    ad_count            INTEGER NOT NULL,
    total_price_cents   INTEGER NOT NULL,
    status              TEXT NOT NULL,          -- processing, completed, failed, cancelled
    cancelled_at        TEXT,
    created_at          TEXT NOT NULL,
    completed_at        TEXT,
    updated_at          TEXT NOT NULL,
    deleted_at          TEXT
);
-- One row per ad of a batch: its index in the matrix (products × audiences × layouts ×
-- sizes) and what it was made of, for the ZIP's names and manifest.
CREATE TABLE image_ad_batch_items (
    batch_id      TEXT NOT NULL REFERENCES image_ad_batches(id),
    item          INTEGER NOT NULL,
    ad_id         TEXT NOT NULL UNIQUE,
    product_id    TEXT NOT NULL,
    product_name  TEXT NOT NULL,               -- at creation
    layout        TEXT NOT NULL,               -- the reference URL or the design template id
    size          TEXT,                        -- placement name or WxH; NULL: the layout's own shape
    PRIMARY KEY (batch_id, item)
);
CREATE INDEX image_ad_batches_org ON image_ad_batches(org_id, seq);
CREATE INDEX image_ads_batch ON image_ads(batch_id);
