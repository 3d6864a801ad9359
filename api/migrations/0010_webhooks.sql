-- Webhooks (issue 12): endpoints, events, and one delivery row per (event, endpoint).
-- Events and their deliveries are written in the same transaction as the state change
-- that causes them (the outbox pattern); a background task delivers pending rows.

CREATE TABLE webhook_endpoints (
    seq                         INTEGER PRIMARY KEY AUTOINCREMENT,
    id                          TEXT NOT NULL UNIQUE,
    org_id                      TEXT NOT NULL REFERENCES organizations(id),
    url                         TEXT NOT NULL,
    description                 TEXT,
    events                      TEXT NOT NULL,          -- JSON array of event types
    enabled                     INTEGER NOT NULL DEFAULT 1,
    disabled_reason             TEXT,
    secret                      TEXT NOT NULL,
    previous_secret             TEXT,                   -- valid until previous_secret_expires_at
    previous_secret_expires_at  TEXT,
    failing_since               TEXT,                   -- first failure since the last success
    created_at                  TEXT NOT NULL,
    updated_at                  TEXT NOT NULL,
    deleted_at                  TEXT
);
CREATE INDEX webhook_endpoints_org ON webhook_endpoints(org_id, seq);

CREATE TABLE events (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    org_id      TEXT NOT NULL REFERENCES organizations(id),
    type        TEXT NOT NULL,
    object_id   TEXT NOT NULL,
    payload     TEXT NOT NULL,                          -- the event exactly as delivered
    created_at  TEXT NOT NULL,
    deleted_at  TEXT                                    -- always NULL (shared list machinery)
);
CREATE INDEX events_org ON events(org_id, seq);

CREATE TABLE webhook_deliveries (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT NOT NULL UNIQUE,
    org_id           TEXT NOT NULL REFERENCES organizations(id),
    endpoint_id      TEXT NOT NULL REFERENCES webhook_endpoints(id),
    event_id         TEXT NOT NULL REFERENCES events(id),
    event_type       TEXT NOT NULL,
    object_id        TEXT NOT NULL,                     -- for ordering per resource
    state            TEXT NOT NULL,                     -- pending, delivered, failed
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_ms  INTEGER,                           -- unix ms; NULL once finished
    lease_until_ms   INTEGER,                           -- unix ms; a claim expires then
    last_status      INTEGER,
    last_error       TEXT,
    latency_ms       INTEGER,
    last_attempt_at  TEXT,
    delivered_at     TEXT,
    created_at       TEXT NOT NULL,
    created_ms       INTEGER NOT NULL,
    deleted_at       TEXT                               -- always NULL (shared list machinery)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(state, next_attempt_ms);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, seq);
CREATE INDEX webhook_deliveries_order ON webhook_deliveries(endpoint_id, object_id, state, seq);
