-- 10: the arguments an approval was requested with, kept when an approver edited them (Revise)
    ALTER TABLE approvals ADD COLUMN original_args TEXT;  -- JSON; NULL unless an approver edited args
    
