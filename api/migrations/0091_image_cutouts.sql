-- Cut-outs (POST /v1/images/{id}/cutout): the image a cut-out was made from, and how its
-- mask was made (`source_alpha`, `colour_key` or `model`). Both NULL for uploads. A source
-- has at most one live cut-out, which a second request returns instead of making another.
ALTER TABLE images ADD COLUMN cutout_of TEXT;
ALTER TABLE images ADD COLUMN cutout_method TEXT;
CREATE INDEX images_cutout_of ON images (cutout_of);
