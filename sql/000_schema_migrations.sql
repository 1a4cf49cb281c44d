-- Bootstraps the version table. The runner applies every later file once, in order, each in its
-- own transaction, and stores the file's checksum so an edited applied migration is refused.
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    text PRIMARY KEY,                 -- the file's number, e.g. '003'
    filename   text NOT NULL,
    checksum   text NOT NULL,                    -- sha256 of the file as it was applied
    applied_at timestamptz NOT NULL DEFAULT now()
);
