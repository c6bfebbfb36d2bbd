-- New job rows and new versions of job rows go only into pages that stay under 70 % full
-- with them. A page of finished jobs that VACUUM has left a little free space in (a table
-- that has retained millions of them has such pages by the million) is then never chosen for
-- one new row at a time: without it, the new rows of a busy table and the new versions that
-- claims and finishes write were spread one per page over those pages, each read in from disk
-- and written whole to the WAL once per checkpoint (17 KB of WAL per job beside 10 million
-- retained jobs instead of 1 KB; docs/benchmarks.md, "Retained rows"). The 30 % left free in
-- each page also holds the next versions of the jobs inserted there. Only pages written from
-- now on are affected; no rewrite, no lock held beyond the change of the setting.
ALTER TABLE {schema}.jobs SET (fillfactor = 70);
