-- Campaign sets (issue 42): the size an ad was laid out for, when it is not its
-- reference's own shape (a named placement such as `9:16`, or NULL for an explicit
-- width and height), and the set it belongs to: the id of the set's first ad (that ad
-- names itself), NULL for an ad in no set.
ALTER TABLE image_ads ADD COLUMN size_placement TEXT;
ALTER TABLE image_ads ADD COLUMN size_width INTEGER;
ALTER TABLE image_ads ADD COLUMN size_height INTEGER;
ALTER TABLE image_ads ADD COLUMN size_set_id TEXT;
CREATE INDEX image_ads_size_set ON image_ads(size_set_id);
