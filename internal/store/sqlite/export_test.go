package sqlite

import "context"

// HistoryRows counts job id's rows in job_events and job_attempts.
func HistoryRows(s *Store, id string) (events, attempts int, err error) {
	err = s.reader.QueryRowContext(context.Background(), `SELECT
		(SELECT count(*) FROM job_events WHERE job_id = ?1),
		(SELECT count(*) FROM job_attempts WHERE job_id = ?1)`, id).Scan(&events, &attempts)
	return events, attempts, err
}

// FairKeys lists the fairness keys queue holds in fair_keys, but the unkeyed jobs' "".
func FairKeys(s *Store, queue string) ([]string, error) {
	rows, err := s.reader.QueryContext(context.Background(),
		`SELECT fairness_key FROM fair_keys WHERE queue = ? AND fairness_key <> '' ORDER BY fairness_key`, queue)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// KeyBucketRows counts the stored buckets of the rate limits per key.
func KeyBucketRows(s *Store) (n int, err error) {
	err = s.reader.QueryRowContext(context.Background(), `SELECT count(*) FROM key_buckets`).Scan(&n)
	return n, err
}
