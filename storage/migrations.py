"""Versioned schema migrations. Append new steps; never edit a step that has shipped."""

from __future__ import annotations

MIGRATIONS: tuple[str, ...] = (
    # 1: channels, participants, history with per-persona delivery, dedupe
    """
    CREATE TABLE channels (
        key         TEXT PRIMARY KEY,
        moderated   INTEGER NOT NULL DEFAULT 0 CHECK (moderated IN (0, 1)),
        max_turns   INTEGER CHECK (max_turns IS NULL OR max_turns >= 1),
        scene       TEXT NOT NULL DEFAULT '',
        created_at  REAL NOT NULL
    );
    CREATE TABLE participants (
        channel_key TEXT NOT NULL REFERENCES channels(key),
        persona_id  TEXT NOT NULL,
        position    INTEGER NOT NULL,
        active      INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
        joined_at   REAL NOT NULL,
        PRIMARY KEY (channel_key, persona_id)
    );
    CREATE TABLE lines (
        id          INTEGER PRIMARY KEY,
        channel_key TEXT NOT NULL REFERENCES channels(key),
        kind        TEXT NOT NULL CHECK (kind IN ('human', 'persona', 'marker')),
        author_id   TEXT NOT NULL,
        author_name TEXT NOT NULL,
        text        TEXT NOT NULL,
        created_at  REAL NOT NULL
    );
    CREATE INDEX lines_by_channel_kind ON lines (channel_key, kind, id);
    CREATE INDEX lines_by_channel ON lines (channel_key, id);
    -- A line is stored once and delivered to each persona present when it was said.
    CREATE TABLE deliveries (
        channel_key TEXT NOT NULL,
        persona_id  TEXT NOT NULL,
        line_id     INTEGER NOT NULL REFERENCES lines(id),
        PRIMARY KEY (channel_key, persona_id, line_id)
    ) WITHOUT ROWID;
    CREATE TABLE processed_events (
        event_id    TEXT PRIMARY KEY,
        seen_at     REAL NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX processed_events_by_age ON processed_events (seen_at);
    """,
    # 2: persona actions behind approval, the audit log, per-channel approval mode
    """
    ALTER TABLE channels ADD COLUMN approval_mode TEXT NOT NULL DEFAULT 'in-the-loop'
        CHECK (approval_mode IN ('in-command', 'in-the-loop', 'on-the-loop'));
    CREATE TABLE approvals (
        id           INTEGER PRIMARY KEY,
        batch        TEXT NOT NULL,  -- one persona turn's actions; also the approval flow's thread id
        call_id      TEXT NOT NULL,
        channel_key  TEXT NOT NULL REFERENCES channels(key),
        thread       TEXT,
        persona_id   TEXT NOT NULL,
        action       TEXT NOT NULL,
        args         TEXT NOT NULL,  -- JSON
        status       TEXT NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'executed', 'failed')),
        requested_at REAL NOT NULL,
        expires_at   REAL NOT NULL,
        decided_by   TEXT,
        decided_at   REAL,
        comment      TEXT,
        incident     INTEGER NOT NULL DEFAULT 0 CHECK (incident IN (0, 1)),
        result       TEXT,
        UNIQUE (batch, call_id)
    );
    CREATE INDEX approvals_pending ON approvals (status, channel_key);
    CREATE TABLE audit_log (
        id           INTEGER PRIMARY KEY,
        at           REAL NOT NULL,
        channel_key  TEXT NOT NULL,
        persona_id   TEXT NOT NULL,
        approval_id  INTEGER,
        action       TEXT NOT NULL,
        event        TEXT NOT NULL CHECK (event IN
                     ('requested', 'approved', 'rejected', 'expired', 'executed', 'failed', 'refused')),
        actor        TEXT,
        detail       TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX audit_by_persona ON audit_log (persona_id, id);
    CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
        BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
    CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
        BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
    """,
)
