-- A placeholder: version 9 belongs to a migration written on another branch at the same time
-- as 0010_merge.sql, and versions must run without gaps. It changes nothing. When that branch
-- is merged, its 0009 takes this file's place: delete this one.
SELECT 1;
