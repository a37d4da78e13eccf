-- 3: the inbox: human lines whose round has not run yet, answered in line order by any process
    CREATE TABLE inbox (
        line_id     {bigint} PRIMARY KEY REFERENCES lines(id),
        channel_key TEXT NOT NULL,
        mentions    TEXT NOT NULL DEFAULT '[]',  -- JSON list of persona ids
        thread      TEXT
    );
    CREATE INDEX inbox_by_channel ON inbox (channel_key, line_id);
    
