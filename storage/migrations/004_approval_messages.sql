-- 4: where each approval request was shown (the platform's own channel and message ids),
-- so that whichever process records the decision can update that message
    CREATE TABLE approval_places (
        approval_id {bigint} PRIMARY KEY REFERENCES approvals(id),
        channel     TEXT NOT NULL,
        message     TEXT NOT NULL
    );
    
