// Package hopperhttp turns HTTP endpoints into asynchronous ones backed by Hopper jobs (the
// AsyncEndpoints pattern): a POST enqueues a job and answers 202 Accepted with a status URL
// at once; a GET of that URL reports the job's state, progress and, when it has one, result.
//
// AsyncHandler enqueues a job of a fixed kind whose args are the request body, a JSON value.
// It records the request in the job's headers so the worker sees what the endpoint saw:
//
//	http.method          the request method
//	http.path            the request path
//	http.path.<name>     each wildcard of the route pattern ({tenant}, {rest...})
//	http.query.<name>    each query parameter
//	http.header.<name>   each request header, lower-cased, except credentials and After
//
// Several values of one header or query parameter are joined with ", ". Credentials
// (Authorization, Cookie, Proxy-Authorization, X-Api-Key) are never recorded: job headers are
// stored in the clear and shown by the CLI. WithoutHeaders drops more. Job headers are text:
// a recorded value with bytes that are not UTF-8 (a Latin-1 header, a %FF in the query) is
// kept with U+FFFD in their place. The body, the kind and the key must be valid UTF-8 (the
// body valid JSON), or the request gets 400.
//
// An Idempotency-Key request header becomes the job's idempotency key: a retry with the same
// key and body gets the job of the first request (202 again, with Idempotent-Replayed: true);
// the same key with another body is refused with 422. An After header (job ids) makes the job
// wait for those jobs, On-Parent-Failure says what a parent's failure does to it (see
// AsyncHandler).
//
// StatusHandler serves GET <prefix>/{id}. With ?wait=10s (at most 60 s) it answers as soon as
// the job is completed, failed or canceled, or when the wait ends, whichever comes first.
//
// Both answer with {"job": {...}, "statusUrl": "..."}: the job's status with the field names
// and values of a job everywhere in Hopper's API (`hopper serve`'s JSON, the CLI's --json;
// docs/api.md), without its args and headers.
//
// Errors are JSON objects {"code": "...", "message": "..."} with the codes of Connect and
// gRPC: invalid_argument, not_found, already_exists, resource_exhausted, unimplemented,
// internal. See docs/async-endpoints.md.
//
// The handlers do no authentication: mount them behind your own. Anyone who can reach
// StatusHandler can read the state and result of any job whose id they know.
package hopperhttp
