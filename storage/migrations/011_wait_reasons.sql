-- 11: why an action waits (the approval policy's reasons) and the confidence its model stated
    ALTER TABLE approvals ADD COLUMN reason TEXT NOT NULL DEFAULT '';
    ALTER TABLE approvals ADD COLUMN confidence {real};
    
