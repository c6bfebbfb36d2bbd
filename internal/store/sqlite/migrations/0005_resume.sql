-- Resume data: what Client.Resume hands to the next attempt of a suspended job, beside its
-- checkpoint. A new suspension clears it.
ALTER TABLE jobs ADD COLUMN resume_data BLOB;
