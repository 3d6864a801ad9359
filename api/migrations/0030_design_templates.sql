-- Design templates (issue 9): a reference analysed into an editable blueprint tree, its
-- earlier trees kept as versions, and the template an image ad was made from.

CREATE TABLE design_templates (
    seq                  INTEGER PRIMARY KEY AUTOINCREMENT,
    id                   TEXT NOT NULL UNIQUE,
    org_id               TEXT NOT NULL REFERENCES organizations(id),
    reference_image_url  TEXT NOT NULL,
    swipe_file_id        TEXT,                   -- the swipe file it was made from, if any
    status               TEXT NOT NULL,          -- processing, completed, failed
    current_json_tree    TEXT,                   -- JSON; null until the analysis completes
    json_tree_version    INTEGER NOT NULL DEFAULT 1,
    change_summary       TEXT,                   -- the summary of the PATCH that made the current version
    version_created_at   TEXT NOT NULL,          -- when the current version was made
    preview_url          TEXT,                   -- the current version's preview PNG
    width                INTEGER,
    height               INTEGER,
    aspect_ratio         TEXT,
    industry             TEXT,
    ad_format            TEXT,
    duration_ms          INTEGER,
    error                TEXT,
    analysis             TEXT,                   -- JSON {cache_hit, composition, note}
    reference_colours    TEXT,                   -- JSON [[r, g, b], ...] of the reference
    job                  TEXT NOT NULL,          -- JSON of the current job (for resume)
    deleted_at           TEXT,
    created_at           TEXT NOT NULL,
    updated_at           TEXT NOT NULL
);
CREATE INDEX design_templates_org ON design_templates(org_id, seq);

-- One row per earlier tree: written by PATCH before the new tree replaces it.
CREATE TABLE design_template_versions (
    seq                INTEGER PRIMARY KEY AUTOINCREMENT,
    template_id        TEXT NOT NULL REFERENCES design_templates(id),
    org_id             TEXT NOT NULL,
    json_tree_version  INTEGER NOT NULL,
    json_tree          TEXT NOT NULL,
    preview_url        TEXT,
    change_summary     TEXT,                     -- the summary of the PATCH that made this version
    created_at         TEXT NOT NULL,            -- when this version was made
    replaced_at        TEXT NOT NULL,
    UNIQUE (template_id, json_tree_version)
);

-- An image ad made with POST /v1/design-templates/{id}/image-ads records its template here
-- (design_template_id stays the historical column, null for new ads).
ALTER TABLE image_ads ADD COLUMN source_design_template_id TEXT;
ALTER TABLE image_ads ADD COLUMN source_design_template_version INTEGER;
