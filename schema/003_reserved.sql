-- Placeholder for migration 003, which is assigned to other work. Replace
-- this file with that migration when it lands; it changes nothing.
DO $$ BEGIN END $$;
