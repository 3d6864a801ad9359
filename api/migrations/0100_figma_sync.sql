-- Design-tool sync (issue 24). An organisation's Figma connection: its personal access
-- token sealed with the deployment's ADFORGE_SECRETS_KEY (AES-256-GCM, bound to the
-- organisation), and the token's last four characters to show it by. One row per
-- organisation; DELETE /v1/integrations/figma removes it.
CREATE TABLE figma_connections (
    org_id        TEXT PRIMARY KEY REFERENCES organizations(id),
    token_sealed  TEXT NOT NULL,
    token_last4   TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);

-- The frame an ad or a template was imported from, and the state of its last sync: JSON
-- {file_name, file_version, frame_hash, last_modified, synced_at, fill_slots, report}.
-- NULL for ads and templates that did not come from Figma.
ALTER TABLE image_ads ADD COLUMN figma_file_key TEXT;
ALTER TABLE image_ads ADD COLUMN figma_node_id TEXT;
ALTER TABLE image_ads ADD COLUMN figma_sync TEXT;
ALTER TABLE design_templates ADD COLUMN figma_file_key TEXT;
ALTER TABLE design_templates ADD COLUMN figma_node_id TEXT;
ALTER TABLE design_templates ADD COLUMN figma_sync TEXT;
