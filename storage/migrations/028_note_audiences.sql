-- 28: channels' privacy (NULL: unknown, as private), each note's channel, summaries' correction version;
-- shared notes go back to the channel their `remember` audit entry names, or are dropped and counted
    ALTER TABLE channels ADD COLUMN private INTEGER CHECK (private IS NULL OR private IN (0, 1));
    ALTER TABLE persona_notes ADD COLUMN channel_key TEXT NOT NULL DEFAULT '';
    ALTER TABLE persona_summaries ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
    UPDATE persona_notes SET channel_key = scope WHERE scope NOT LIKE 'persona:%';
    UPDATE persona_notes SET channel_key = COALESCE((
        SELECT a.channel_key FROM audit_log a
        WHERE a.action = 'remember' AND a.event = 'executed' AND a.persona_id = persona_notes.persona_id
        AND a.at >= persona_notes.created_at AND a.at < persona_notes.created_at + 60
        AND a.detail LIKE '%' || substr(persona_notes.text, 1, 40) || '%'
        ORDER BY a.at, a.id LIMIT 1
    ), '') WHERE scope LIKE 'persona:%';
    INSERT INTO audit_log (at, channel_key, persona_id, action, event, actor, detail)
        SELECT MAX(created_at), 'storage', 'memory', 'memory', 'executed', 'migration 28',
            COUNT(*) || ' shared notes dropped: the audit log names no channel they were taken in'
        FROM persona_notes WHERE channel_key = '' HAVING COUNT(*) > 0;
    DELETE FROM persona_notes WHERE channel_key = '';
    UPDATE persona_notes SET scope = channel_key;
    CREATE INDEX persona_notes_by_channel ON persona_notes (persona_id, channel_key, id);
    
