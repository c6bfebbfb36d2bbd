-- Merging (contract 9). Same column as SQLite's 0010. merge_key (0001) names what a job merges
-- with; merge_policy is the policy of the enqueue that made the job ('keep', 'replace' or
-- 'append'; NULL without a merge key). A merge reads it to refuse a change of shape: appending
-- to a job whose args are not a list, or replacing a list. jobs_merge (0001) finds the job a
-- key merges into. A nullable column without a default: adding it rewrites nothing.
ALTER TABLE {schema}.jobs ADD COLUMN merge_policy text;
