"""Versioned schema migrations, one list for both engines. Append new steps; never edit a shipped one.

Each step is written once; the few words the engines spell differently are placeholders that
`storage.dialects.migration_sql` fills in.
"""

from __future__ import annotations

MIGRATIONS: tuple[str, ...] = (
    # 1: channels, participants, history with per-persona delivery, dedupe
    """
    CREATE TABLE channels (
        key         TEXT PRIMARY KEY,
        moderated   INTEGER NOT NULL DEFAULT 0 CHECK (moderated IN (0, 1)),
        max_turns   INTEGER CHECK (max_turns IS NULL OR max_turns >= 1),
        scene       TEXT NOT NULL DEFAULT '',
        created_at  {real} NOT NULL
    );
    CREATE TABLE participants (
        channel_key TEXT NOT NULL REFERENCES channels(key),
        persona_id  TEXT NOT NULL,
        position    INTEGER NOT NULL,
        active      INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
        joined_at   {real} NOT NULL,
        PRIMARY KEY (channel_key, persona_id)
    );
    CREATE TABLE lines (
        id          {id},
        channel_key TEXT NOT NULL REFERENCES channels(key),
        kind        TEXT NOT NULL CHECK (kind IN ('human', 'persona', 'marker')),
        author_id   TEXT NOT NULL,
        author_name TEXT NOT NULL,
        text        TEXT NOT NULL,
        created_at  {real} NOT NULL
    );
    CREATE INDEX lines_by_channel_kind ON lines (channel_key, kind, id);
    CREATE INDEX lines_by_channel ON lines (channel_key, id);
    -- A line is stored once and delivered to each persona present when it was said.
    CREATE TABLE deliveries (
        channel_key TEXT NOT NULL,
        persona_id  TEXT NOT NULL,
        line_id     {bigint} NOT NULL REFERENCES lines(id),
        PRIMARY KEY (channel_key, persona_id, line_id)
    ) {without_rowid};
    CREATE TABLE processed_events (
        event_id    TEXT PRIMARY KEY,
        seen_at     {real} NOT NULL
    ) {without_rowid};
    CREATE INDEX processed_events_by_age ON processed_events (seen_at);
    """,
    # 2: persona actions behind approval, the audit log, per-channel approval mode
    """
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
    """,
    # 3: the inbox: human lines whose round has not run yet, answered in line order by any process
    """
    CREATE TABLE inbox (
        line_id     {bigint} PRIMARY KEY REFERENCES lines(id),
        channel_key TEXT NOT NULL,
        mentions    TEXT NOT NULL DEFAULT '[]',  -- JSON list of persona ids
        thread      TEXT
    );
    CREATE INDEX inbox_by_channel ON inbox (channel_key, line_id);
    """,
    # 4: where each approval request was shown (the platform's own channel and message ids),
    # so that whichever process records the decision can update that message
    """
    CREATE TABLE approval_places (
        approval_id {bigint} PRIMARY KEY REFERENCES approvals(id),
        channel     TEXT NOT NULL,
        message     TEXT NOT NULL
    );
    """,
    # 5: persona tool calls in history, each paired with its result; revised approvals
    """
    ALTER TABLE lines ADD COLUMN tool_calls TEXT;  -- JSON [{id, name, args}] on a persona's own line
    ALTER TABLE lines ADD COLUMN call_id TEXT;     -- on a result line: the call it answers
    ALTER TABLE approvals ADD COLUMN revises {bigint};  -- the rejected approval this one revises
    """,
    # 6: an approved action's run is claimed before it starts ('running', by one process), so a
    # run cut short by a stop is reported ('unknown') instead of being run blindly again
    """
    {widen_approval_status}
    ALTER TABLE approvals ADD COLUMN started_at {real};
    ALTER TABLE approvals ADD COLUMN runner TEXT;  -- the process that claimed the run
    """,
    # 7: who decided each approval, in the platform's own user id (shown as a mention)
    """
    CREATE TABLE approval_deciders (
        approval_id {bigint} PRIMARY KEY REFERENCES approvals(id),
        user_id     TEXT NOT NULL
    );
    """,
    # 8: steering the moderator per channel
    """
    ALTER TABLE channels ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE channels ADD COLUMN show_reasons INTEGER;  -- NULL: [moderation] show_reasons
    ALTER TABLE channels ADD COLUMN recruit INTEGER;       -- NULL: [moderation] recruit
    ALTER TABLE channels ADD COLUMN moderator_prompt TEXT NOT NULL DEFAULT '';
    ALTER TABLE channels ADD COLUMN stop_requested INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE channels ADD COLUMN next_speaker TEXT;   -- a persona id named with /next
    ALTER TABLE channels ADD COLUMN last_decisions TEXT NOT NULL DEFAULT '[]';  -- JSON: the last round's picks
    """,
    # 9: the platform's id of a waiting message, so its platform can mark it while it is answered
    """
    ALTER TABLE inbox ADD COLUMN event_id TEXT;
    """,
    # 10: the arguments an approval was requested with, kept when an approver edited them (Revise)
    """
    ALTER TABLE approvals ADD COLUMN original_args TEXT;  -- JSON; NULL unless an approver edited args
    """,
    # 11: why an action waits (the approval policy's reasons) and the confidence its model stated
    """
    ALTER TABLE approvals ADD COLUMN reason TEXT NOT NULL DEFAULT '';
    ALTER TABLE approvals ADD COLUMN confidence {real};
    """,
    # 12: tasks: the request, its plan (JSON) and status, the plan message's platform id, and the
    # people's stop and replan requests waiting for the supervisor
    """
    CREATE TABLE tasks (
        id             {id},
        channel_key    TEXT NOT NULL REFERENCES channels(key),
        thread         TEXT,
        status         TEXT NOT NULL DEFAULT 'planning'
                       CHECK (status IN ('planning', 'running', 'completed', 'failed', 'stopped')),
        request        TEXT NOT NULL,
        author_name    TEXT NOT NULL,
        plan           TEXT,  -- JSON: graph.tasks.Plan
        note           TEXT NOT NULL DEFAULT '',  -- how the task ended
        shown_as       TEXT,  -- the plan message's platform id, to edit it
        stop_requested INTEGER NOT NULL DEFAULT 0,
        instruction    TEXT,  -- a /task replan not taken yet
        created_at     {real} NOT NULL,
        updated_at     {real} NOT NULL
    );
    CREATE INDEX tasks_by_channel ON tasks (channel_key, status);
    """,
    # 13: the mailbox: personas' private notes (each also a line in its recipient's history alone),
    # pending until a turn of the recipient's has read it; and how many notes a full mailbox dropped
    """
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
    """,
    # 14: model failures in a row per channel, toward [approvals] failures_before_pause: stored, so
    # that a restart or another process goes on counting
    """
    ALTER TABLE channels ADD COLUMN failures_in_a_row INTEGER NOT NULL DEFAULT 0;
    """,
    # 15: where each approval request was posted, on every platform, in one table with who decided
    # it there (a platform user id, shown as a mention): approval_places and approval_deciders in one
    """
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
    """,
    # 16: a person steering a task: who asked for it (only they or an approver may steer it), who
    # paused it, who took over its remaining steps, the steps people finished (/task done, JSON,
    # waiting for the supervisor), a cancellation, and the step under way with its private note
    # (a step cut short runs again only if its persona has not answered that note)
    """
    ALTER TABLE tasks ADD COLUMN author_id TEXT NOT NULL DEFAULT '';
    ALTER TABLE tasks ADD COLUMN paused_by TEXT;
    ALTER TABLE tasks ADD COLUMN taken_by TEXT;
    ALTER TABLE tasks ADD COLUMN handed_in TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE tasks ADD COLUMN cancelled_by TEXT;
    ALTER TABLE tasks ADD COLUMN cancel_reason TEXT NOT NULL DEFAULT '';
    ALTER TABLE tasks ADD COLUMN step_id INTEGER;
    ALTER TABLE tasks ADD COLUMN step_note {bigint};
    """,
    # 17: "Approve always": an approver let one MCP tool ("SERVER.TOOL") run without asking in one channel
    """
    CREATE TABLE tool_grants (
        channel_key TEXT NOT NULL,
        tool        TEXT NOT NULL,
        granted_by  TEXT NOT NULL,
        granted_at  {real} NOT NULL,
        PRIMARY KEY (channel_key, tool)
    );
    """,
    # 18: Gemini 3 thought signatures kept with a persona's line (its text part's; its calls' ride in
    # tool_calls), and model token usage per day, channel, persona, role and model
    """
    ALTER TABLE lines ADD COLUMN signature TEXT;
    CREATE TABLE token_usage (
        day             TEXT NOT NULL,  -- UTC, YYYY-MM-DD
        channel_key     TEXT NOT NULL,
        persona_id      TEXT NOT NULL,  -- '' for the moderator, the planner and the coordinator
        role            TEXT NOT NULL CHECK (role IN ('persona', 'moderator', 'judge', 'planner')),
        model           TEXT NOT NULL,
        calls           {bigint} NOT NULL,
        input_tokens    {bigint} NOT NULL,
        output_tokens   {bigint} NOT NULL,
        thinking_tokens {bigint} NOT NULL,
        PRIMARY KEY (channel_key, day, persona_id, role, model)
    );
    """,
    # 19: the outbox: everything Roundtable posts, stored in the transaction of what it shows, sent
    # in order per conversation by whichever process claims it (a lease); and the progress of each
    # running round after its last committed turn, so a round cut by a crash is run on from there
    """
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
    """,
    # 20: a thread follows its channel's rules (parent_key) until a manager changes one in it
    # (own_rules); each channel's tenant, "slack:T…", "discord:<guild>" or "console", for trust
    # counted per workspace or guild; and who decided, by platform user id and team, not by name
    """
    ALTER TABLE channels ADD COLUMN parent_key TEXT;
    ALTER TABLE channels ADD COLUMN own_rules INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE channels ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
    CREATE INDEX channels_by_parent ON channels (parent_key);
    ALTER TABLE approvals ADD COLUMN decided_by_id TEXT;
    ALTER TABLE approvals ADD COLUMN decided_by_team TEXT;
    ALTER TABLE audit_log ADD COLUMN actor_id TEXT;
    ALTER TABLE audit_log ADD COLUMN actor_team TEXT;
    """,
    # 21: a persona's notes (`remember`; scope: a channel, or "persona:<tenant>" when shared), its summaries
    # of what left its window (with the last line covered), and listen-only personas (graph/memory.py)
    """
    CREATE TABLE persona_notes (
        id         {id},
        scope      TEXT NOT NULL,
        persona_id TEXT NOT NULL,
        text       TEXT NOT NULL,
        created_at {real} NOT NULL
    );
    CREATE INDEX persona_notes_by_persona ON persona_notes (scope, persona_id, id);
    CREATE TABLE persona_summaries (
        channel_key            TEXT NOT NULL,
        persona_id             TEXT NOT NULL,
        summary                TEXT NOT NULL,
        covers_through_line_id {bigint} NOT NULL,
        updated_at             {real} NOT NULL,
        PRIMARY KEY (channel_key, persona_id)
    );
    ALTER TABLE participants ADD COLUMN quiet INTEGER NOT NULL DEFAULT 0;
    """,
    # 22: a task's steps under way, each with its own private note and attempt (steps run side by
    # side), and a task resumed by a person, whose plan the planner checks before it goes on
    """
    CREATE TABLE task_steps (
        task_id    {bigint} NOT NULL REFERENCES tasks(id),
        step_id    INTEGER NOT NULL,
        revision   INTEGER NOT NULL,  -- the plan's: a replan may give a new step an old number
        attempt    INTEGER NOT NULL,
        note_line  {bigint} NOT NULL,  -- the private note of this attempt
        step       TEXT NOT NULL,  -- JSON: graph.tasks.Step as the attempt began, or as it ended
        finished   INTEGER NOT NULL DEFAULT 0 CHECK (finished IN (0, 1)),
        updated_at {real} NOT NULL,
        PRIMARY KEY (task_id, step_id)
    );
    ALTER TABLE tasks ADD COLUMN recheck INTEGER NOT NULL DEFAULT 0;
    """,
    # 23: a task's artifacts: each step's whole result (its persona's reply and what its actions
    # did, or what a person said they did), and the task's answer (step 0), written by its integrator
    """
    CREATE TABLE task_artifacts (
        task_id    {bigint} NOT NULL REFERENCES tasks(id),
        step_id    INTEGER NOT NULL,  -- 0: the task's answer
        author_id  TEXT NOT NULL,  -- the persona id, or the name of the person who did the step
        text       TEXT NOT NULL,
        updated_at {real} NOT NULL,
        PRIMARY KEY (task_id, step_id)
    );
    """,
    # 24: each approval's risk (graph/risk.py) and the task step it serves, and the risk in the audit log
    """
    ALTER TABLE approvals ADD COLUMN risk TEXT NOT NULL DEFAULT '';
    ALTER TABLE approvals ADD COLUMN task_id INTEGER;
    ALTER TABLE approvals ADD COLUMN task_title TEXT;
    ALTER TABLE approvals ADD COLUMN task_step INTEGER;
    ALTER TABLE approvals ADD COLUMN task_steps INTEGER;
    CREATE INDEX approvals_by_task ON approvals (task_id);
    ALTER TABLE audit_log ADD COLUMN risk TEXT;
    """,
    # 25: batches of actions that wait for a person, held from the transaction that stores the
    # persona's calls until their approval flow ends (storage/batches.py)
    """
    CREATE TABLE held_batches (
        batch       TEXT PRIMARY KEY,
        channel_key TEXT NOT NULL,
        state       TEXT NOT NULL,  -- JSON: graph.state.Batch
        created_at  {real} NOT NULL
    );
    """,
    # 26 (task undos): each undo a rollback asked for, at most one per original action (its
    # approval id), taken again only once that undo was rejected or expired; and who asked to roll a
    # task back (such a task earns no trust for its completed steps, graph/trust.py)
    """
    CREATE TABLE task_undos (
        undoes   {bigint} PRIMARY KEY REFERENCES approvals(id),  -- the original action's approval
        task_id  {bigint} NOT NULL REFERENCES tasks(id),
        batch    TEXT NOT NULL,  -- the rollback batch whose request undo-<undoes> asks for it
        asked_at {real} NOT NULL
    );
    ALTER TABLE tasks ADD COLUMN rolled_back_by TEXT;
    UPDATE tasks SET rolled_back_by = '' WHERE id IN (SELECT task_id FROM approvals WHERE batch LIKE 'rollback:%');
    """,
    # 27 (action post marks): the platform's place of an approved post's run, noted and committed before
    # the post is made, so start-up recovery reads only what came after it (on Discord, the newest
    # message id in the target channel: a webhook post takes no nonce; bot/discord_bot/action_posts.py)
    """
    ALTER TABLE approvals ADD COLUMN post_mark {bigint};
    """,
)
