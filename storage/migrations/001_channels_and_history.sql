-- 1: channels, participants, history with per-persona delivery, dedupe
    CREATE TABLE channels (
        key         TEXT PRIMARY KEY,
        moderated   INTEGER NOT NULL DEFAULT 0 CHECK (moderated IN (0, 1)),
        max_turns   INTEGER CHECK (max_turns IS NULL OR max_turns >= 1),
        scene       TEXT NOT NULL DEFAULT '',
        created_at  {real} NOT NULL
    );
    CREATE TABLE participants (
        channel_key TEXT NOT NULL REFERENCES channels(key),
        persona_id  TEXT NOT NULL,
        position    INTEGER NOT NULL,
        active      INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
        joined_at   {real} NOT NULL,
        PRIMARY KEY (channel_key, persona_id)
    );
    CREATE TABLE lines (
        id          {id},
        channel_key TEXT NOT NULL REFERENCES channels(key),
        kind        TEXT NOT NULL CHECK (kind IN ('human', 'persona', 'marker')),
        author_id   TEXT NOT NULL,
        author_name TEXT NOT NULL,
        text        TEXT NOT NULL,
        created_at  {real} NOT NULL
    );
    CREATE INDEX lines_by_channel_kind ON lines (channel_key, kind, id);
    CREATE INDEX lines_by_channel ON lines (channel_key, id);
    -- A line is stored once and delivered to each persona present when it was said.
    CREATE TABLE deliveries (
        channel_key TEXT NOT NULL,
        persona_id  TEXT NOT NULL,
        line_id     {bigint} NOT NULL REFERENCES lines(id),
        PRIMARY KEY (channel_key, persona_id, line_id)
    ) {without_rowid};
    CREATE TABLE processed_events (
        event_id    TEXT PRIMARY KEY,
        seen_at     {real} NOT NULL
    ) {without_rowid};
    CREATE INDEX processed_events_by_age ON processed_events (seen_at);
    
