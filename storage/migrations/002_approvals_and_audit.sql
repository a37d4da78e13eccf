-- 2: persona actions behind approval, the audit log, per-channel approval mode
    ALTER TABLE channels ADD COLUMN approval_mode TEXT NOT NULL DEFAULT 'in-the-loop'
        CHECK (approval_mode IN ('in-command', 'in-the-loop', 'on-the-loop'));
    CREATE TABLE approvals (
        id           {id},
        batch        TEXT NOT NULL,  -- one persona turn's actions; also the approval flow's thread id
        call_id      TEXT NOT NULL,
        channel_key  TEXT NOT NULL REFERENCES channels(key),
        thread       TEXT,
        persona_id   TEXT NOT NULL,
        action       TEXT NOT NULL,
        args         TEXT NOT NULL,  -- JSON
        status       TEXT NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'executed', 'failed')),
        requested_at {real} NOT NULL,
        expires_at   {real} NOT NULL,
        decided_by   TEXT,
        decided_at   {real},
        comment      TEXT,
        incident     INTEGER NOT NULL DEFAULT 0 CHECK (incident IN (0, 1)),
        result       TEXT,
        UNIQUE (batch, call_id)
    );
    CREATE INDEX approvals_pending ON approvals (status, channel_key);
    CREATE TABLE audit_log (
        id           {id},
        at           {real} NOT NULL,
        channel_key  TEXT NOT NULL,
        persona_id   TEXT NOT NULL,
        approval_id  {bigint},
        action       TEXT NOT NULL,
        event        TEXT NOT NULL CHECK (event IN
                     ('requested', 'approved', 'rejected', 'expired', 'executed', 'failed', 'refused')),
        actor        TEXT,
        detail       TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX audit_by_persona ON audit_log (persona_id, id);
    {append_only:audit_log}
    
