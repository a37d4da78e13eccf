-- 8: steering the moderator per channel
    ALTER TABLE channels ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE channels ADD COLUMN show_reasons INTEGER;  -- NULL: [moderation] show_reasons
    ALTER TABLE channels ADD COLUMN recruit INTEGER;       -- NULL: [moderation] recruit
    ALTER TABLE channels ADD COLUMN moderator_prompt TEXT NOT NULL DEFAULT '';
    ALTER TABLE channels ADD COLUMN stop_requested INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE channels ADD COLUMN next_speaker TEXT;   -- a persona id named with /next
    ALTER TABLE channels ADD COLUMN last_decisions TEXT NOT NULL DEFAULT '[]';  -- JSON: the last round's picks
    
