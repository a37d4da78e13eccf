-- 29: the platform's place of an approved post's run, noted and committed before the post is made,
-- so start-up recovery reads only what came after it (on Discord, the newest message id in the
-- target channel: a webhook post takes no nonce; bot/discord_bot/action_posts.py)
ALTER TABLE approvals ADD COLUMN post_mark {bigint};
