package sqlite

import "context"

// HistoryRows counts job id's rows in job_events and job_attempts.
func HistoryRows(s *Store, id string) (events, attempts int, err error) {
	err = s.reader.QueryRowContext(context.Background(), `SELECT
		(SELECT count(*) FROM job_events WHERE job_id = ?1),
		(SELECT count(*) FROM job_attempts WHERE job_id = ?1)`, id).Scan(&events, &attempts)
	return events, attempts, err
}
