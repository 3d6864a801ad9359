-- A source image has at most one live cut-out (POST /v1/images/{id}/cutout). Two requests
-- at the same moment could each find none and each insert one; with this index the second
-- insert does nothing (`ON CONFLICT ... DO NOTHING`) and its request answers the first's
-- row. Duplicates made before it are soft-deleted first, keeping each source's earliest
-- cut-out (they all point at the same file: cut-outs are stored by content hash).
UPDATE images SET deleted_at = updated_at
 WHERE cutout_of IS NOT NULL AND deleted_at IS NULL
   AND seq > (SELECT min(o.seq) FROM images AS o
               WHERE o.cutout_of = images.cutout_of AND o.deleted_at IS NULL);
CREATE UNIQUE INDEX images_one_live_cutout ON images (cutout_of)
 WHERE cutout_of IS NOT NULL AND deleted_at IS NULL;
