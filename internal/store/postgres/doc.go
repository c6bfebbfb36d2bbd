// Package postgres is Hopper's PostgreSQL store, for many processes sharing one database. It
// behaves exactly like the SQLite store: both pass the conformance suite in storetest.
//
// Design, in short:
//
//   - Schema. Every table lives in one schema (Config.Schema, default "hopper") and every
//     statement names it, quoted, so nothing depends on search_path and the store works inside
//     an application's transaction (Store.Tx, Store.SQLTx). Migrations are embedded, numbered
//     like SQLite's, and applied in one transaction under pg_advisory_xact_lock.
//   - Payloads. args, result and checkpoint are bytea: the bytes come back exactly as given.
//     jsonb would reorder keys; json would parse every payload and refuse bytes that are not
//     UTF-8.
//   - History. job_events and job_attempts are written by statement-level AFTER triggers with
//     transition tables: a batch of 1,000 rows costs one INSERT … SELECT, not 1,000 calls. The
//     job row holds its creation and the attempt that ended the job (history.go), so a job
//     that runs once writes no history row.
//   - Claim. One statement: a CTE with FOR UPDATE SKIP LOCKED and LIMIT, then UPDATE … FROM
//     it. Fleet-wide caps take a short transaction that locks only the cap rows involved.
//     While a subscription listens, a claim starts where the last claim of its queue found its
//     first job (cursor.go), so that a long transaction elsewhere, which keeps the index
//     entries of claimed jobs from being removed, does not make every claim walk them.
//   - Batches. Inserts, finishes and lease extensions bind arrays and unnest them: one
//     statement, one round trip, whatever the batch size. Items with a merge key go one by one
//     in a transaction that first takes a transaction-level advisory lock per key (merge.go).
//   - Wake-ups. The triggers NOTIFY "<schema>_jobs" once per queue whose jobs became
//     claimable (with the smallest of their ids, for the claim cursors), once per canceled
//     running job, and with the earliest run_at of jobs that became scheduled; PostgreSQL
//     sends them at commit and folds duplicates within a transaction. Subscribe LISTENs on a
//     dedicated connection. A store paces the wake-ups of its own inserts (wakes.go): one
//     notifying statement in flight per queue, the others' wake-ups held and sent together.
//   - Time. With Config.Clock nil every time is the database's now(), one clock for the whole
//     cluster; a Clock (tests' fake one) is passed as a parameter instead:
//     coalesce($1::timestamptz, now()) in every statement.
package postgres
