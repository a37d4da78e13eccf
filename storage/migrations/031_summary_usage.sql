-- 31: the memory keeper's summary calls are counted in token_usage as role 'summary' (graph/observe.py
-- ROLES), which migration 18's CHECK did not allow, so a flush holding one was refused whole. A CHECK
-- cannot be changed in place on SQLite: the table is made again with the same rows.
    CREATE TABLE token_usage_031 (
        day             TEXT NOT NULL,
        channel_key     TEXT NOT NULL,
        persona_id      TEXT NOT NULL,
        role            TEXT NOT NULL CHECK (role IN ('persona', 'moderator', 'judge', 'planner', 'summary')),
        model           TEXT NOT NULL,
        calls           {bigint} NOT NULL,
        input_tokens    {bigint} NOT NULL,
        output_tokens   {bigint} NOT NULL,
        thinking_tokens {bigint} NOT NULL,
        PRIMARY KEY (channel_key, day, persona_id, role, model)
    );
    INSERT INTO token_usage_031 SELECT day, channel_key, persona_id, role, model, calls, input_tokens,
        output_tokens, thinking_tokens FROM token_usage;
    DROP TABLE token_usage;
    ALTER TABLE token_usage_031 RENAME TO token_usage;
