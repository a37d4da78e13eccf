-- 13: the mailbox: personas' private notes (each also a line in its recipient's history alone),
-- pending until a turn of the recipient's has read it; and how many notes a full mailbox dropped
    CREATE TABLE notes (
        id           {id},
        channel_key  TEXT NOT NULL REFERENCES channels(key),
        sender_id    TEXT NOT NULL,
        recipient_id TEXT NOT NULL,
        text         TEXT NOT NULL,
        line_id      {bigint} NOT NULL REFERENCES lines(id),
        sent_at      {real} NOT NULL,
        delivered_at {real}  -- NULL while pending
    );
    CREATE INDEX notes_by_recipient ON notes (channel_key, recipient_id, delivered_at);
    CREATE TABLE note_drops (
        channel_key     TEXT NOT NULL,
        recipient_id    TEXT NOT NULL,
        dropped         {bigint} NOT NULL,
        last_dropped_at {real} NOT NULL,
        PRIMARY KEY (channel_key, recipient_id)
    );
    
