-- 19: the outbox: everything Roundtable posts, stored in the transaction of what it shows, sent
-- in order per conversation by whichever process claims it (a lease); and the progress of each
-- running round after its last committed turn, so a round cut by a crash is run on from there
    CREATE TABLE outbox (
        id              {id},
        conversation    TEXT NOT NULL,  -- channel key and thread: its posts go out in id order
        platform        TEXT NOT NULL,  -- the channel key's prefix: only a process serving it sends it
        channel_key     TEXT NOT NULL,
        thread          TEXT,
        kind            TEXT NOT NULL,
        payload         TEXT NOT NULL,  -- JSON
        dedupe          TEXT UNIQUE,  -- a request or decision shown once, however often it is queued
        status          TEXT NOT NULL DEFAULT 'waiting' CHECK (status IN ('waiting', 'sent', 'failed')),
        created_at      {real} NOT NULL,
        attempts        INTEGER NOT NULL DEFAULT 0,
        next_try_at     {real} NOT NULL,
        claimed_by      TEXT,
        claimed_until   {real},
        in_flight_since {real},  -- since then, an attempt's outcome is unknown: look before posting again
        sent_ref        TEXT,  -- the platform's id of the posted message, for later edits
        error           TEXT,
        finished_at     {real}
    );
    CREATE INDEX outbox_waiting ON outbox (status, conversation, id);
    CREATE TABLE running_rounds (
        channel_key TEXT PRIMARY KEY,
        line_id     {bigint} NOT NULL,
        message     TEXT NOT NULL,  -- JSON: the waiting message the round answers, off the inbox
        state       TEXT,  -- JSON: the round after its last committed turn; NULL before the first
        updated_at  {real} NOT NULL
    );
    
