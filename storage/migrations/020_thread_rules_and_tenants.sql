-- 20: a thread follows its channel's rules (parent_key) until a manager changes one in it
-- (own_rules); each channel's tenant, "slack:T…", "discord:<guild>" or "console", for trust
-- counted per workspace or guild; and who decided, by platform user id and team, not by name
    ALTER TABLE channels ADD COLUMN parent_key TEXT;
    ALTER TABLE channels ADD COLUMN own_rules INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE channels ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
    CREATE INDEX channels_by_parent ON channels (parent_key);
    ALTER TABLE approvals ADD COLUMN decided_by_id TEXT;
    ALTER TABLE approvals ADD COLUMN decided_by_team TEXT;
    ALTER TABLE audit_log ADD COLUMN actor_id TEXT;
    ALTER TABLE audit_log ADD COLUMN actor_team TEXT;
    
