-- 9: the platform's id of a waiting message, so its platform can mark it while it is answered
    ALTER TABLE inbox ADD COLUMN event_id TEXT;
    
