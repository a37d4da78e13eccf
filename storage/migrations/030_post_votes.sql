-- 30: people's 👍 and 👎 on personas' posts, a quality signal. persona_posts: each platform message
-- a persona's post went out as (a long post is several), noted when the outbox has sent it, so a
-- reaction on one finds its post, persona and model; post_votes: one vote per person and post (a
-- new one replaces the old; it keeps the persona and the model, so it outlives the message's row),
-- with the reason a 👎 got in its author's next reply in the post's thread
    CREATE TABLE persona_posts (
        message     TEXT PRIMARY KEY,  -- "slack:<channel>:<ts>", "discord:<message id>"
        post        TEXT NOT NULL,  -- the post it is (a piece of): "outbox:<entry id>"
        channel_key TEXT NOT NULL,
        reply_place TEXT NOT NULL,  -- the channel key a reply in the post's thread arrives with
        persona_id  TEXT NOT NULL,
        model       TEXT NOT NULL,
        posted_at   {real} NOT NULL
    );
    CREATE INDEX persona_posts_by_age ON persona_posts (posted_at);
    CREATE TABLE post_votes (
        post        TEXT NOT NULL,
        voter       TEXT NOT NULL,  -- the platform's user id
        channel_key TEXT NOT NULL,
        reply_place TEXT NOT NULL,
        persona_id  TEXT NOT NULL,
        model       TEXT NOT NULL,
        vote        INTEGER NOT NULL CHECK (vote IN (-1, 1)),
        reason      TEXT,
        voted_at    {real} NOT NULL,
        PRIMARY KEY (post, voter)
    );
    CREATE INDEX post_votes_by_channel ON post_votes (channel_key, voted_at);
    CREATE INDEX post_votes_waiting_reason ON post_votes (voter, reply_place, voted_at);
