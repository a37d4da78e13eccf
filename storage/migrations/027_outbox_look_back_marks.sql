-- 27: the look-back mark of each outbox post (Discord: the newest message id in its channel before
-- the attempt, noted before the platform call), so a process that takes the entry over after a
-- crash reads only what came after it; -1 (storage.outbox.MARK_NEVER_NOTED) on an attempt already
-- in flight here, made before marks were kept
    ALTER TABLE outbox ADD COLUMN look_back_mark {bigint};
    UPDATE outbox SET look_back_mark = -1 WHERE status = 'waiting' AND in_flight_since IS NOT NULL;
    
