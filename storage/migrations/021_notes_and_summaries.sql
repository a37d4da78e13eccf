-- 21: a persona's notes (`remember`; scope: a channel, or "persona:<tenant>" when shared), its summaries
-- of what left its window (with the last line covered), and listen-only personas (graph/memory.py)
    CREATE TABLE persona_notes (
        id         {id},
        scope      TEXT NOT NULL,
        persona_id TEXT NOT NULL,
        text       TEXT NOT NULL,
        created_at {real} NOT NULL
    );
    CREATE INDEX persona_notes_by_persona ON persona_notes (scope, persona_id, id);
    CREATE TABLE persona_summaries (
        channel_key            TEXT NOT NULL,
        persona_id             TEXT NOT NULL,
        summary                TEXT NOT NULL,
        covers_through_line_id {bigint} NOT NULL,
        updated_at             {real} NOT NULL,
        PRIMARY KEY (channel_key, persona_id)
    );
    ALTER TABLE participants ADD COLUMN quiet INTEGER NOT NULL DEFAULT 0;
    
