-- adforge foundation schema. Portable SQL (SQLite now, PostgreSQL on the roadmap):
-- TEXT ids, TEXT ISO-8601 UTC timestamps, JSON in TEXT columns, an integer `seq` per row
-- that orders lists newest first and anchors cursors.

CREATE TABLE organizations (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES organizations(id),
    secret_hash  TEXT NOT NULL UNIQUE,       -- hex SHA-256 of the whole key; the key itself is never stored
    last4        TEXT NOT NULL,
    scopes       TEXT NOT NULL,              -- JSON array of scope names, or ["all"]
    rate_limit   INTEGER,                    -- requests per rolling 60 s; NULL = default
    created_at   TEXT NOT NULL,
    revoked_at   TEXT
);

CREATE TABLE wallets (
    org_id         TEXT PRIMARY KEY REFERENCES organizations(id),
    balance_cents  INTEGER NOT NULL DEFAULT 0,
    held_cents     INTEGER NOT NULL DEFAULT 0,
    updated_at     TEXT NOT NULL,
    CHECK (balance_cents >= 0 AND held_cents >= 0)
);

CREATE TABLE wallet_ledger (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL UNIQUE,
    org_id        TEXT NOT NULL REFERENCES organizations(id),
    kind          TEXT NOT NULL,              -- top_up, hold, release, charge
    amount_cents  INTEGER NOT NULL,
    reference     TEXT,                       -- e.g. the image ad a hold or charge is for
    created_at    TEXT NOT NULL
);
CREATE INDEX wallet_ledger_org ON wallet_ledger(org_id, seq);

CREATE TABLE images (
    seq                  INTEGER PRIMARY KEY AUTOINCREMENT,
    id                   TEXT NOT NULL UNIQUE,
    org_id               TEXT NOT NULL REFERENCES organizations(id),
    blob_key             TEXT NOT NULL,
    width                INTEGER NOT NULL,
    height               INTEGER NOT NULL,
    format               TEXT NOT NULL,
    size_bytes           INTEGER NOT NULL,
    alt_text             TEXT,
    image_type           TEXT,
    is_ai_generated      INTEGER NOT NULL DEFAULT 0,
    logo_theme           TEXT,
    product_id           TEXT,
    thumb_small_key      TEXT,
    thumb_medium_key     TEXT,
    thumb_large_key      TEXT,
    enriched_description TEXT,
    search_text          TEXT NOT NULL DEFAULT '',  -- lower-cased alt text + description
    created_at           TEXT NOT NULL,
    updated_at           TEXT NOT NULL,
    deleted_at           TEXT
);
CREATE INDEX images_org ON images(org_id, seq);

CREATE TABLE brands (
    seq                 INTEGER PRIMARY KEY AUTOINCREMENT,
    id                  TEXT NOT NULL UNIQUE,
    org_id              TEXT NOT NULL REFERENCES organizations(id),
    name                TEXT NOT NULL,
    description         TEXT,
    color_palettes      TEXT,
    fonts               TEXT NOT NULL DEFAULT '[]',
    logo_image_ids      TEXT,
    details             TEXT,
    duplicated_from_id  TEXT,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    deleted_at          TEXT
);
CREATE INDEX brands_org ON brands(org_id, seq);

CREATE TABLE products (
    seq                 INTEGER PRIMARY KEY AUTOINCREMENT,
    id                  TEXT NOT NULL UNIQUE,
    org_id              TEXT NOT NULL REFERENCES organizations(id),
    brand_id            TEXT NOT NULL REFERENCES brands(id),
    name                TEXT NOT NULL,
    search_name         TEXT NOT NULL,
    description         TEXT,
    details             TEXT,
    duplicated_from_id  TEXT,
    archived_at         TEXT,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    deleted_at          TEXT
);
CREATE INDEX products_org ON products(org_id, seq);
CREATE INDEX products_brand ON products(brand_id);

CREATE TABLE product_variants (
    seq                 INTEGER PRIMARY KEY AUTOINCREMENT,
    id                  TEXT NOT NULL UNIQUE,
    org_id              TEXT NOT NULL REFERENCES organizations(id),
    product_id          TEXT NOT NULL REFERENCES products(id),
    name                TEXT NOT NULL,
    search_name         TEXT NOT NULL,
    description         TEXT,
    sku                 TEXT,
    price               TEXT,
    attributes          TEXT,
    image_ids           TEXT NOT NULL DEFAULT '[]',
    duplicated_from_id  TEXT,
    archived_at         TEXT,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    deleted_at          TEXT
);
CREATE INDEX product_variants_org ON product_variants(org_id, seq);
CREATE INDEX product_variants_product ON product_variants(product_id);

CREATE TABLE audiences (
    seq                 INTEGER PRIMARY KEY AUTOINCREMENT,
    id                  TEXT NOT NULL UNIQUE,
    org_id              TEXT NOT NULL REFERENCES organizations(id),
    product_id          TEXT NOT NULL REFERENCES products(id),
    name                TEXT NOT NULL,
    search_name         TEXT NOT NULL,
    description         TEXT,
    details             TEXT,
    duplicated_from_id  TEXT,
    archived_at         TEXT,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    deleted_at          TEXT
);
CREATE INDEX audiences_org ON audiences(org_id, seq);
CREATE INDEX audiences_product ON audiences(product_id);

CREATE TABLE idempotency_keys (
    api_key_id       TEXT NOT NULL,
    idem_key         TEXT NOT NULL,
    request_hash     TEXT NOT NULL,
    state            TEXT NOT NULL,          -- in_flight, done
    response_status  INTEGER,
    response_body    BLOB,
    created_at       TEXT NOT NULL,
    PRIMARY KEY (api_key_id, idem_key)
);
CREATE INDEX idempotency_created ON idempotency_keys(created_at);
