-- The web dashboard's people (issue 13): profiles, their memberships in organisations,
-- browser sessions and one-time sign-in links; what key rotation and the wallet's
-- top-up references need.

CREATE TABLE profiles (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    id             TEXT NOT NULL UNIQUE,          -- prof_…
    email          TEXT NOT NULL UNIQUE,          -- trimmed and lower-cased
    name           TEXT NOT NULL,
    password_hash  TEXT,                          -- argon2id PHC string; NULL until a sign-in link sets it
    is_operator    INTEGER NOT NULL DEFAULT 0,    -- the service's operators: top-ups across organisations
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL
);

CREATE TABLE memberships (
    profile_id  TEXT NOT NULL REFERENCES profiles(id),
    org_id      TEXT NOT NULL REFERENCES organizations(id),
    role        TEXT NOT NULL CHECK (role IN ('owner', 'member')),
    created_at  TEXT NOT NULL,
    PRIMARY KEY (profile_id, org_id)
);
CREATE INDEX memberships_org ON memberships(org_id);

CREATE TABLE dashboard_sessions (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL UNIQUE,           -- dss_… (shown in the sessions list)
    profile_id    TEXT NOT NULL REFERENCES profiles(id),
    org_id        TEXT NOT NULL REFERENCES organizations(id),  -- the organisation this session works in
    token_hash    TEXT NOT NULL UNIQUE,           -- hex SHA-256 of the cookie's token
    csrf_token    TEXT NOT NULL,                  -- every form of this session carries it
    user_agent    TEXT,
    created_at    TEXT NOT NULL,
    last_seen_at  TEXT NOT NULL,
    revoked_at    TEXT
);
CREATE INDEX dashboard_sessions_profile ON dashboard_sessions(profile_id, seq);

CREATE TABLE sign_in_links (
    token_hash  TEXT PRIMARY KEY,                 -- hex SHA-256 of the link's token
    profile_id  TEXT NOT NULL REFERENCES profiles(id),
    org_id      TEXT NOT NULL REFERENCES organizations(id),
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    used_at     TEXT
);

-- Key rotation: the old key keeps working until expires_at; last use to the minute.
ALTER TABLE api_keys ADD COLUMN expires_at TEXT;
ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;
ALTER TABLE api_keys ADD COLUMN rotated_from TEXT;
ALTER TABLE api_keys ADD COLUMN created_by TEXT;  -- prof_… when made in the dashboard

-- Who made a top-up (prof_…, or NULL for the admin CLI); the operator's reference goes in
-- `reference`.
ALTER TABLE wallet_ledger ADD COLUMN created_by TEXT;
