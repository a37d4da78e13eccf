-- 15: where each approval request was posted, on every platform, in one table with who decided
-- it there (a platform user id, shown as a mention): approval_places and approval_deciders in one
    CREATE TABLE request_places (
        approval_id {bigint} PRIMARY KEY REFERENCES approvals(id),
        platform    TEXT NOT NULL,  -- slack, discord
        channel     TEXT NOT NULL,  -- the platform's channel (or thread) id
        message     TEXT NOT NULL,  -- the platform's message id: a Slack ts, a Discord snowflake
        decider     TEXT            -- the platform user id of who decided, when it was decided there
    );
    INSERT INTO request_places (approval_id, platform, channel, message, decider)
        SELECT p.approval_id,
               CASE WHEN p.channel LIKE 'discord:%' THEN 'discord' ELSE 'slack' END,
               CASE WHEN p.channel LIKE 'discord:%' THEN substr(p.channel, 9) ELSE p.channel END,
               p.message,
               d.user_id
        FROM approval_places p LEFT JOIN approval_deciders d ON d.approval_id = p.approval_id;
    DROP TABLE approval_deciders;
    DROP TABLE approval_places;
    
