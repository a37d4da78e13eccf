-- 7: who decided each approval, in the platform's own user id (shown as a mention)
    CREATE TABLE approval_deciders (
        approval_id {bigint} PRIMARY KEY REFERENCES approvals(id),
        user_id     TEXT NOT NULL
    );
    
