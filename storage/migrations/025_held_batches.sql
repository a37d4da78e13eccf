-- 25: batches of actions that wait for a person, held from the transaction that stores the
-- persona's calls until their approval flow ends (storage/batches.py)
    CREATE TABLE held_batches (
        batch       TEXT PRIMARY KEY,
        channel_key TEXT NOT NULL,
        state       TEXT NOT NULL,  -- JSON: graph.state.Batch
        created_at  {real} NOT NULL
    );
    
