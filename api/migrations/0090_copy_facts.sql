-- Facts the copywriter may state (issue 21): a variant's former price, shown crossed out
-- (JSON `{"amount", "currency"}` like `price`; the discount is computed from the two), and
-- the report of what the copywriter wrote into an ad and where each fact came from (JSON,
-- written with the completed ad).
ALTER TABLE product_variants ADD COLUMN compare_at_price TEXT;
ALTER TABLE image_ads ADD COLUMN copy_report TEXT;
