-- 17: "Approve always": an approver let one MCP tool ("SERVER.TOOL") run without asking in one channel
    CREATE TABLE tool_grants (
        channel_key TEXT NOT NULL,
        tool        TEXT NOT NULL,
        granted_by  TEXT NOT NULL,
        granted_at  {real} NOT NULL,
        PRIMARY KEY (channel_key, tool)
    );
    
