-- A delivery asked for by POST /v1/events/{id}/redeliver (1) rather than written with its
-- event (0). Redeliveries are attempted at once: they neither wait behind nor hold back the
-- first deliveries of their resource, and one that succeeds drops its event's scheduled
-- retries to the same endpoint.
ALTER TABLE webhook_deliveries ADD COLUMN redelivery INTEGER NOT NULL DEFAULT 0;
