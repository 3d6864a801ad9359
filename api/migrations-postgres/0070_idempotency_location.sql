-- The Location header of a stored idempotent response (202 and 201 answers that carry one),
-- so a replay answers with it as the first response did.
ALTER TABLE idempotency_keys ADD COLUMN response_location TEXT COLLATE "C";
