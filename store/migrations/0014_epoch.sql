-- (Reserved as 0016: renumber at merge so that the versions run on.)
--
-- database_epoch is a random id of this copy of the database, renewed at
-- every Open that may write (store.Open): a database restored from a
-- backup (scanner backup, a disk snapshot, the same file twice) hands out
-- event and delivery ids again from where its copy stopped, and the epoch
-- in each id keeps them apart from the ids the lost timeline published.
CREATE TABLE database_epoch (
	id    INTEGER PRIMARY KEY CHECK (id = 1),
	epoch TEXT NOT NULL
);
INSERT INTO database_epoch (id, epoch) VALUES (1, lower(hex(randomblob(8))));

-- Each event keeps the epoch it was written in (compat.Event.UID): events
-- from before this migration keep '' and so the ids they were published
-- with (a feed reader does not show them again).
ALTER TABLE events ADD COLUMN epoch TEXT NOT NULL DEFAULT '';

-- Each delivery keeps the id it is sent with on every try (its event's
-- UID); deliveries queued before this migration keep '' and are sent with
-- their row's id, as before.
ALTER TABLE webhook_deliveries ADD COLUMN uid TEXT NOT NULL DEFAULT '';
