-- What a PATCH of an editable ad changed, in the words of whoever sent it (the dashboard's
-- editor writes one from its undo history): kept with the version it made, at most 500
-- characters, NULL for version 1 and for edits that gave none.
ALTER TABLE image_ad_versions ADD COLUMN change_summary TEXT;
