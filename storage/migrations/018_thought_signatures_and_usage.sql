-- 18: Gemini 3 thought signatures kept with a persona's line (its text part's; its calls' ride in
-- tool_calls), and model token usage per day, channel, persona, role and model
    ALTER TABLE lines ADD COLUMN signature TEXT;
    CREATE TABLE token_usage (
        day             TEXT NOT NULL,  -- UTC, YYYY-MM-DD
        channel_key     TEXT NOT NULL,
        persona_id      TEXT NOT NULL,  -- '' for the moderator, the planner and the coordinator
        role            TEXT NOT NULL CHECK (role IN ('persona', 'moderator', 'judge', 'planner')),
        model           TEXT NOT NULL,
        calls           {bigint} NOT NULL,
        input_tokens    {bigint} NOT NULL,
        output_tokens   {bigint} NOT NULL,
        thinking_tokens {bigint} NOT NULL,
        PRIMARY KEY (channel_key, day, persona_id, role, model)
    );
    
