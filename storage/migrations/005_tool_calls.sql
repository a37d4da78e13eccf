-- 5: persona tool calls in history, each paired with its result; revised approvals
    ALTER TABLE lines ADD COLUMN tool_calls TEXT;  -- JSON [{id, name, args}] on a persona's own line
    ALTER TABLE lines ADD COLUMN call_id TEXT;     -- on a result line: the call it answers
    ALTER TABLE approvals ADD COLUMN revises {bigint};  -- the rejected approval this one revises
    
