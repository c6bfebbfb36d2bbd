from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from hopper.gen import options_pb2 as _options_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class APIKey(_message.Message):
    __slots__ = ["created_at", "id", "last_used_at", "name", "revoked_at", "scopes"]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LAST_USED_AT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    REVOKED_AT_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    created_at: _timestamp_pb2.Timestamp
    id: str
    last_used_at: _timestamp_pb2.Timestamp
    name: str
    revoked_at: _timestamp_pb2.Timestamp
    scopes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_used_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., revoked_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ActivateRequest(_message.Message):
    __slots__ = ["ahead", "batch_kinds", "fetch_fields", "fetch_parent_results", "kinds", "lease_timeout", "max_jobs", "queue", "queues", "request_timeout", "worker"]
    AHEAD_FIELD_NUMBER: _ClassVar[int]
    BATCH_KINDS_FIELD_NUMBER: _ClassVar[int]
    FETCH_FIELDS_FIELD_NUMBER: _ClassVar[int]
    FETCH_PARENT_RESULTS_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    LEASE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    MAX_JOBS_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    ahead: int
    batch_kinds: _containers.RepeatedCompositeFieldContainer[BatchKind]
    fetch_fields: _containers.RepeatedScalarFieldContainer[str]
    fetch_parent_results: bool
    kinds: _containers.RepeatedScalarFieldContainer[str]
    lease_timeout: _duration_pb2.Duration
    max_jobs: int
    queue: str
    queues: _containers.RepeatedScalarFieldContainer[str]
    request_timeout: _duration_pb2.Duration
    worker: str
    def __init__(self, worker: _Optional[str] = ..., queue: _Optional[str] = ..., kinds: _Optional[_Iterable[str]] = ..., max_jobs: _Optional[int] = ..., lease_timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., request_timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., fetch_fields: _Optional[_Iterable[str]] = ..., queues: _Optional[_Iterable[str]] = ..., ahead: _Optional[int] = ..., batch_kinds: _Optional[_Iterable[_Union[BatchKind, _Mapping]]] = ..., fetch_parent_results: bool = ...) -> None: ...

class ActivateResponse(_message.Message):
    __slots__ = ["fair_ahead", "jobs", "restricted"]
    FAIR_AHEAD_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    RESTRICTED_FIELD_NUMBER: _ClassVar[int]
    fair_ahead: _duration_pb2.Duration
    jobs: _containers.RepeatedCompositeFieldContainer[ActivatedJob]
    restricted: bool
    def __init__(self, jobs: _Optional[_Iterable[_Union[ActivatedJob, _Mapping]]] = ..., restricted: bool = ..., fair_ahead: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ActivatedJob(_message.Message):
    __slots__ = ["args", "attempt", "batch_id", "checkpoint", "created_at", "default_timeout", "headers", "id", "kind", "lease_expires_at", "lease_token", "max_attempts", "parent_results", "parent_results_omitted", "queue", "resume_data", "retry_policy", "timeout"]
    class HeadersEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ARGS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    PARENT_RESULTS_FIELD_NUMBER: _ClassVar[int]
    PARENT_RESULTS_OMITTED_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RESUME_DATA_FIELD_NUMBER: _ClassVar[int]
    RETRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    args: str
    attempt: int
    batch_id: str
    checkpoint: str
    created_at: _timestamp_pb2.Timestamp
    default_timeout: _duration_pb2.Duration
    headers: _containers.ScalarMap[str, str]
    id: str
    kind: str
    lease_expires_at: _timestamp_pb2.Timestamp
    lease_token: int
    max_attempts: int
    parent_results: _containers.RepeatedCompositeFieldContainer[ParentResult]
    parent_results_omitted: bool
    queue: str
    resume_data: str
    retry_policy: RetryPolicy
    timeout: _duration_pb2.Duration
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[str] = ..., queue: _Optional[str] = ..., args: _Optional[str] = ..., headers: _Optional[_Mapping[str, str]] = ..., attempt: _Optional[int] = ..., max_attempts: _Optional[int] = ..., lease_token: _Optional[int] = ..., lease_expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., retry_policy: _Optional[_Union[RetryPolicy, _Mapping]] = ..., checkpoint: _Optional[str] = ..., resume_data: _Optional[str] = ..., default_timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., batch_id: _Optional[str] = ..., parent_results: _Optional[_Iterable[_Union[ParentResult, _Mapping]]] = ..., parent_results_omitted: bool = ...) -> None: ...

class Attempt(_message.Message):
    __slots__ = ["attempt", "ended_at", "error", "error_code", "lease_token", "outcome", "stack", "started_at", "worker_id"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    STACK_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    ended_at: _timestamp_pb2.Timestamp
    error: str
    error_code: str
    lease_token: int
    outcome: str
    stack: str
    started_at: _timestamp_pb2.Timestamp
    worker_id: str
    def __init__(self, lease_token: _Optional[int] = ..., attempt: _Optional[int] = ..., worker_id: _Optional[str] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., outcome: _Optional[str] = ..., error: _Optional[str] = ..., stack: _Optional[str] = ..., error_code: _Optional[str] = ...) -> None: ...

class BatchKind(_message.Message):
    __slots__ = ["kind", "max_jobs", "max_wait", "ungrouped"]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MAX_JOBS_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_FIELD_NUMBER: _ClassVar[int]
    UNGROUPED_FIELD_NUMBER: _ClassVar[int]
    kind: str
    max_jobs: int
    max_wait: _duration_pb2.Duration
    ungrouped: bool
    def __init__(self, kind: _Optional[str] = ..., max_jobs: _Optional[int] = ..., max_wait: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., ungrouped: bool = ...) -> None: ...

class CancelRequest(_message.Message):
    __slots__ = ["id", "reason"]
    ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    id: str
    reason: str
    def __init__(self, id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CancelResponse(_message.Message):
    __slots__ = ["job"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class CancelWorkflowRequest(_message.Message):
    __slots__ = ["id", "reason"]
    ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    id: str
    reason: str
    def __init__(self, id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CancelWorkflowResponse(_message.Message):
    __slots__ = ["canceled", "workflow"]
    CANCELED_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_FIELD_NUMBER: _ClassVar[int]
    canceled: _containers.RepeatedCompositeFieldContainer[Job]
    workflow: Workflow
    def __init__(self, workflow: _Optional[_Union[Workflow, _Mapping]] = ..., canceled: _Optional[_Iterable[_Union[Job, _Mapping]]] = ...) -> None: ...

class CompactedGroup(_message.Message):
    __slots__ = ["group_key", "new_job_id", "replaced"]
    GROUP_KEY_FIELD_NUMBER: _ClassVar[int]
    NEW_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    REPLACED_FIELD_NUMBER: _ClassVar[int]
    group_key: str
    new_job_id: str
    replaced: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, group_key: _Optional[str] = ..., new_job_id: _Optional[str] = ..., replaced: _Optional[_Iterable[str]] = ...) -> None: ...

class CompleteRequest(_message.Message):
    __slots__ = ["id", "lease_token", "result"]
    ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    id: str
    lease_token: int
    result: str
    def __init__(self, id: _Optional[str] = ..., lease_token: _Optional[int] = ..., result: _Optional[str] = ...) -> None: ...

class CompleteResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class CreateKeyRequest(_message.Message):
    __slots__ = ["name", "scopes"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    name: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ...) -> None: ...

class CreateKeyResponse(_message.Message):
    __slots__ = ["key", "plaintext"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    PLAINTEXT_FIELD_NUMBER: _ClassVar[int]
    key: APIKey
    plaintext: str
    def __init__(self, key: _Optional[_Union[APIKey, _Mapping]] = ..., plaintext: _Optional[str] = ...) -> None: ...

class DeadLetterFilter(_message.Message):
    __slots__ = ["failed_after", "failed_before", "kinds", "queues"]
    FAILED_AFTER_FIELD_NUMBER: _ClassVar[int]
    FAILED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    failed_after: _timestamp_pb2.Timestamp
    failed_before: _timestamp_pb2.Timestamp
    kinds: _containers.RepeatedScalarFieldContainer[str]
    queues: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, queues: _Optional[_Iterable[str]] = ..., kinds: _Optional[_Iterable[str]] = ..., failed_after: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., failed_before: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class DeadLetterServiceListRequest(_message.Message):
    __slots__ = ["cursor", "error_codes", "filter", "include_replayed", "limit"]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODES_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_REPLAYED_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    cursor: str
    error_codes: _containers.RepeatedScalarFieldContainer[str]
    filter: DeadLetterFilter
    include_replayed: bool
    limit: int
    def __init__(self, filter: _Optional[_Union[DeadLetterFilter, _Mapping]] = ..., cursor: _Optional[str] = ..., limit: _Optional[int] = ..., include_replayed: bool = ..., error_codes: _Optional[_Iterable[str]] = ...) -> None: ...

class DeadLetterServiceListResponse(_message.Message):
    __slots__ = ["jobs", "next_cursor", "replays"]
    class ReplaysEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ReplaySummary
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ReplaySummary, _Mapping]] = ...) -> None: ...
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    REPLAYS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    next_cursor: str
    replays: _containers.MessageMap[str, ReplaySummary]
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ..., next_cursor: _Optional[str] = ..., replays: _Optional[_Mapping[str, ReplaySummary]] = ...) -> None: ...

class DeadLetterServiceRetryManyRequest(_message.Message):
    __slots__ = ["filter", "limit", "reason", "retries"]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RETRIES_FIELD_NUMBER: _ClassVar[int]
    filter: DeadLetterFilter
    limit: int
    reason: str
    retries: int
    def __init__(self, filter: _Optional[_Union[DeadLetterFilter, _Mapping]] = ..., limit: _Optional[int] = ..., retries: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class DeadLetterServiceRetryManyResponse(_message.Message):
    __slots__ = ["jobs", "retried_by", "skipped"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    RETRIED_BY_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    retried_by: str
    skipped: int
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ..., retried_by: _Optional[str] = ..., skipped: _Optional[int] = ...) -> None: ...

class DeadLetterServiceStatsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class DeadLetterServiceStatsResponse(_message.Message):
    __slots__ = ["count", "oldest_age", "oldest_failed_at", "replayed"]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    OLDEST_AGE_FIELD_NUMBER: _ClassVar[int]
    OLDEST_FAILED_AT_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    count: int
    oldest_age: _duration_pb2.Duration
    oldest_failed_at: _timestamp_pb2.Timestamp
    replayed: int
    def __init__(self, count: _Optional[int] = ..., oldest_failed_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., oldest_age: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., replayed: _Optional[int] = ...) -> None: ...

class EnqueueBatchRequest(_message.Message):
    __slots__ = ["jobs"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[JobSpec]
    def __init__(self, jobs: _Optional[_Iterable[_Union[JobSpec, _Mapping]]] = ...) -> None: ...

class EnqueueBatchResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[EnqueueResponse]
    def __init__(self, results: _Optional[_Iterable[_Union[EnqueueResponse, _Mapping]]] = ...) -> None: ...

class EnqueueRequest(_message.Message):
    __slots__ = ["job"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: JobSpec
    def __init__(self, job: _Optional[_Union[JobSpec, _Mapping]] = ...) -> None: ...

class EnqueueResponse(_message.Message):
    __slots__ = ["existing", "job", "merged"]
    EXISTING_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    MERGED_FIELD_NUMBER: _ClassVar[int]
    existing: bool
    job: Job
    merged: bool
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., existing: bool = ..., merged: bool = ...) -> None: ...

class EnqueueWorkflowRequest(_message.Message):
    __slots__ = ["name", "steps"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    name: str
    steps: _containers.RepeatedCompositeFieldContainer[WorkflowStep]
    def __init__(self, name: _Optional[str] = ..., steps: _Optional[_Iterable[_Union[WorkflowStep, _Mapping]]] = ...) -> None: ...

class EnqueueWorkflowResponse(_message.Message):
    __slots__ = ["jobs", "workflow"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    workflow: Workflow
    def __init__(self, workflow: _Optional[_Union[Workflow, _Mapping]] = ..., jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ["actor", "at", "reason", "seq", "to"]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    actor: str
    at: _timestamp_pb2.Timestamp
    reason: str
    seq: int
    to: str
    def __init__(self, seq: _Optional[int] = ..., at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., to: _Optional[str] = ..., actor: _Optional[str] = ..., reason: _Optional[str] = ..., **kwargs) -> None: ...

class EventsRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class EventsResponse(_message.Message):
    __slots__ = ["attempts", "events"]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    attempts: _containers.RepeatedCompositeFieldContainer[Attempt]
    events: _containers.RepeatedCompositeFieldContainer[Event]
    def __init__(self, events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ..., attempts: _Optional[_Iterable[_Union[Attempt, _Mapping]]] = ...) -> None: ...

class ExtendLeaseRequest(_message.Message):
    __slots__ = ["duration", "id", "lease_token"]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    duration: _duration_pb2.Duration
    id: str
    lease_token: int
    def __init__(self, id: _Optional[str] = ..., lease_token: _Optional[int] = ..., duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ExtendLeaseResponse(_message.Message):
    __slots__ = ["lease_expires_at"]
    LEASE_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    lease_expires_at: _timestamp_pb2.Timestamp
    def __init__(self, lease_expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class FailRequest(_message.Message):
    __slots__ = ["checkpoint", "error", "error_code", "id", "lease_token", "no_retry", "outcome", "retries", "retry_backoff", "retry_policy", "stack"]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    NO_RETRY_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    RETRIES_FIELD_NUMBER: _ClassVar[int]
    RETRY_BACKOFF_FIELD_NUMBER: _ClassVar[int]
    RETRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    STACK_FIELD_NUMBER: _ClassVar[int]
    checkpoint: str
    error: str
    error_code: str
    id: str
    lease_token: int
    no_retry: bool
    outcome: str
    retries: int
    retry_backoff: _duration_pb2.Duration
    retry_policy: RetryPolicy
    stack: str
    def __init__(self, id: _Optional[str] = ..., lease_token: _Optional[int] = ..., error: _Optional[str] = ..., retries: _Optional[int] = ..., retry_backoff: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., outcome: _Optional[str] = ..., stack: _Optional[str] = ..., no_retry: bool = ..., retry_policy: _Optional[_Union[RetryPolicy, _Mapping]] = ..., checkpoint: _Optional[str] = ..., error_code: _Optional[str] = ...) -> None: ...

class FailResponse(_message.Message):
    __slots__ = ["run_at", "state"]
    RUN_AT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    run_at: _timestamp_pb2.Timestamp
    state: str
    def __init__(self, state: _Optional[str] = ..., run_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class GetResponse(_message.Message):
    __slots__ = ["job"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class GetWorkflowRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class GetWorkflowResponse(_message.Message):
    __slots__ = ["steps", "workflow"]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_FIELD_NUMBER: _ClassVar[int]
    steps: _containers.RepeatedCompositeFieldContainer[WorkflowStepStatus]
    workflow: Workflow
    def __init__(self, workflow: _Optional[_Union[Workflow, _Mapping]] = ..., steps: _Optional[_Iterable[_Union[WorkflowStepStatus, _Mapping]]] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ["id", "lease_token"]
    ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    id: str
    lease_token: int
    def __init__(self, id: _Optional[str] = ..., lease_token: _Optional[int] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class HoldRequest(_message.Message):
    __slots__ = ["held", "queue", "queues", "worker"]
    HELD_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    held: bool
    queue: str
    queues: _containers.RepeatedScalarFieldContainer[str]
    worker: str
    def __init__(self, worker: _Optional[str] = ..., queue: _Optional[str] = ..., held: bool = ..., queues: _Optional[_Iterable[str]] = ...) -> None: ...

class HoldResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ImportKeyRequest(_message.Message):
    __slots__ = ["key", "name", "scopes"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    key: str
    name: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, key: _Optional[str] = ..., name: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ...) -> None: ...

class ImportKeyResponse(_message.Message):
    __slots__ = ["created", "key"]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    created: bool
    key: APIKey
    def __init__(self, key: _Optional[_Union[APIKey, _Mapping]] = ..., created: bool = ...) -> None: ...

class InputLimits(_message.Message):
    __slots__ = ["max_activate_jobs", "max_activate_queues", "max_activate_wait", "max_args_bytes", "max_attempts", "max_cap", "max_error_bytes", "max_error_code_len", "max_filter_codes", "max_header_bytes", "max_id_len", "max_key_len", "max_kind_len", "max_name_len", "max_parents", "max_priority", "max_progress_message_bytes", "max_queue_len", "max_reason_bytes", "max_rescues", "max_result_ttl", "max_retention", "max_run_at_future", "max_run_at_past", "max_spawn", "max_stream_credit", "max_stream_kind_caps", "max_timeout", "max_workflow_steps"]
    MAX_ACTIVATE_JOBS_FIELD_NUMBER: _ClassVar[int]
    MAX_ACTIVATE_QUEUES_FIELD_NUMBER: _ClassVar[int]
    MAX_ACTIVATE_WAIT_FIELD_NUMBER: _ClassVar[int]
    MAX_ARGS_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    MAX_CAP_FIELD_NUMBER: _ClassVar[int]
    MAX_ERROR_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_ERROR_CODE_LEN_FIELD_NUMBER: _ClassVar[int]
    MAX_FILTER_CODES_FIELD_NUMBER: _ClassVar[int]
    MAX_HEADER_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_ID_LEN_FIELD_NUMBER: _ClassVar[int]
    MAX_KEY_LEN_FIELD_NUMBER: _ClassVar[int]
    MAX_KIND_LEN_FIELD_NUMBER: _ClassVar[int]
    MAX_NAME_LEN_FIELD_NUMBER: _ClassVar[int]
    MAX_PARENTS_FIELD_NUMBER: _ClassVar[int]
    MAX_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    MAX_PROGRESS_MESSAGE_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_QUEUE_LEN_FIELD_NUMBER: _ClassVar[int]
    MAX_REASON_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_RESCUES_FIELD_NUMBER: _ClassVar[int]
    MAX_RESULT_TTL_FIELD_NUMBER: _ClassVar[int]
    MAX_RETENTION_FIELD_NUMBER: _ClassVar[int]
    MAX_RUN_AT_FUTURE_FIELD_NUMBER: _ClassVar[int]
    MAX_RUN_AT_PAST_FIELD_NUMBER: _ClassVar[int]
    MAX_SPAWN_FIELD_NUMBER: _ClassVar[int]
    MAX_STREAM_CREDIT_FIELD_NUMBER: _ClassVar[int]
    MAX_STREAM_KIND_CAPS_FIELD_NUMBER: _ClassVar[int]
    MAX_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    MAX_WORKFLOW_STEPS_FIELD_NUMBER: _ClassVar[int]
    max_activate_jobs: int
    max_activate_queues: int
    max_activate_wait: _duration_pb2.Duration
    max_args_bytes: int
    max_attempts: int
    max_cap: int
    max_error_bytes: int
    max_error_code_len: int
    max_filter_codes: int
    max_header_bytes: int
    max_id_len: int
    max_key_len: int
    max_kind_len: int
    max_name_len: int
    max_parents: int
    max_priority: int
    max_progress_message_bytes: int
    max_queue_len: int
    max_reason_bytes: int
    max_rescues: int
    max_result_ttl: _duration_pb2.Duration
    max_retention: _duration_pb2.Duration
    max_run_at_future: _duration_pb2.Duration
    max_run_at_past: _duration_pb2.Duration
    max_spawn: int
    max_stream_credit: int
    max_stream_kind_caps: int
    max_timeout: _duration_pb2.Duration
    max_workflow_steps: int
    def __init__(self, max_id_len: _Optional[int] = ..., max_kind_len: _Optional[int] = ..., max_queue_len: _Optional[int] = ..., max_key_len: _Optional[int] = ..., max_name_len: _Optional[int] = ..., max_error_code_len: _Optional[int] = ..., max_reason_bytes: _Optional[int] = ..., max_progress_message_bytes: _Optional[int] = ..., max_error_bytes: _Optional[int] = ..., max_args_bytes: _Optional[int] = ..., max_header_bytes: _Optional[int] = ..., max_priority: _Optional[int] = ..., max_attempts: _Optional[int] = ..., max_rescues: _Optional[int] = ..., max_cap: _Optional[int] = ..., max_filter_codes: _Optional[int] = ..., max_run_at_past: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_run_at_future: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_retention: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_result_ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_activate_jobs: _Optional[int] = ..., max_activate_wait: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_activate_queues: _Optional[int] = ..., max_stream_credit: _Optional[int] = ..., max_stream_kind_caps: _Optional[int] = ..., max_parents: _Optional[int] = ..., max_spawn: _Optional[int] = ..., max_workflow_steps: _Optional[int] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ["args", "attempt", "checkpoint", "created_at", "deadline_at", "expires_at", "fairness_key", "finished_at", "group_key", "has_children", "headers", "heartbeat_at", "id", "idempotency_key", "kind", "last_error", "last_error_code", "lease_expires_at", "lease_token", "max_attempts", "max_rescues", "merge_key", "original_id", "priority", "progress_message", "progress_percent", "queue", "replay_count", "replayed_by", "rescues", "result", "resume_data", "run_at", "stalled", "started_at", "state", "step", "timeout", "updated_at", "worker_id", "workflow_id"]
    class HeadersEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ARGS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_KEY_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    GROUP_KEY_FIELD_NUMBER: _ClassVar[int]
    HAS_CHILDREN_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_AT_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    MAX_RESCUES_FIELD_NUMBER: _ClassVar[int]
    MERGE_KEY_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_ID_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_PERCENT_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_BY_FIELD_NUMBER: _ClassVar[int]
    REPLAY_COUNT_FIELD_NUMBER: _ClassVar[int]
    RESCUES_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    RESUME_DATA_FIELD_NUMBER: _ClassVar[int]
    RUN_AT_FIELD_NUMBER: _ClassVar[int]
    STALLED_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    args: str
    attempt: int
    checkpoint: str
    created_at: _timestamp_pb2.Timestamp
    deadline_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    fairness_key: str
    finished_at: _timestamp_pb2.Timestamp
    group_key: str
    has_children: bool
    headers: _containers.ScalarMap[str, str]
    heartbeat_at: _timestamp_pb2.Timestamp
    id: str
    idempotency_key: str
    kind: str
    last_error: str
    last_error_code: str
    lease_expires_at: _timestamp_pb2.Timestamp
    lease_token: int
    max_attempts: int
    max_rescues: int
    merge_key: str
    original_id: str
    priority: int
    progress_message: str
    progress_percent: int
    queue: str
    replay_count: int
    replayed_by: str
    rescues: int
    result: str
    resume_data: str
    run_at: _timestamp_pb2.Timestamp
    stalled: bool
    started_at: _timestamp_pb2.Timestamp
    state: str
    step: str
    timeout: _duration_pb2.Duration
    updated_at: _timestamp_pb2.Timestamp
    worker_id: str
    workflow_id: str
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[str] = ..., queue: _Optional[str] = ..., priority: _Optional[int] = ..., args: _Optional[str] = ..., headers: _Optional[_Mapping[str, str]] = ..., state: _Optional[str] = ..., attempt: _Optional[int] = ..., max_attempts: _Optional[int] = ..., lease_token: _Optional[int] = ..., run_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., worker_id: _Optional[str] = ..., lease_expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., heartbeat_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., progress_percent: _Optional[int] = ..., progress_message: _Optional[str] = ..., result: _Optional[str] = ..., last_error: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., group_key: _Optional[str] = ..., original_id: _Optional[str] = ..., replay_count: _Optional[int] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., stalled: bool = ..., checkpoint: _Optional[str] = ..., deadline_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., resume_data: _Optional[str] = ..., rescues: _Optional[int] = ..., max_rescues: _Optional[int] = ..., replayed_by: _Optional[str] = ..., merge_key: _Optional[str] = ..., last_error_code: _Optional[str] = ..., fairness_key: _Optional[str] = ..., has_children: bool = ..., workflow_id: _Optional[str] = ..., step: _Optional[str] = ...) -> None: ...

class JobServiceResumeRequest(_message.Message):
    __slots__ = ["data", "id", "reason"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    data: str
    id: str
    reason: str
    def __init__(self, id: _Optional[str] = ..., data: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class JobServiceResumeResponse(_message.Message):
    __slots__ = ["job"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class JobServiceRetryRequest(_message.Message):
    __slots__ = ["again", "args", "id", "reason", "retries", "run_at"]
    AGAIN_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RETRIES_FIELD_NUMBER: _ClassVar[int]
    RUN_AT_FIELD_NUMBER: _ClassVar[int]
    again: bool
    args: str
    id: str
    reason: str
    retries: int
    run_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., retries: _Optional[int] = ..., args: _Optional[str] = ..., run_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., again: bool = ...) -> None: ...

class JobServiceRetryResponse(_message.Message):
    __slots__ = ["job", "retried_by"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    RETRIED_BY_FIELD_NUMBER: _ClassVar[int]
    job: Job
    retried_by: str
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., retried_by: _Optional[str] = ...) -> None: ...

class JobServiceSetRetriesRequest(_message.Message):
    __slots__ = ["id", "max_attempts"]
    ID_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    id: str
    max_attempts: int
    def __init__(self, id: _Optional[str] = ..., max_attempts: _Optional[int] = ...) -> None: ...

class JobServiceSetRetriesResponse(_message.Message):
    __slots__ = ["job"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class JobSpec(_message.Message):
    __slots__ = ["after", "args", "delay", "fairness_key", "group_key", "headers", "idempotency_key", "idempotency_retention", "kind", "max_attempts", "max_rescues", "merge", "merge_key", "on_parent_failure", "priority", "queue", "retry_policy", "run_at", "timeout"]
    class HeadersEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    AFTER_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    DELAY_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_KEY_FIELD_NUMBER: _ClassVar[int]
    GROUP_KEY_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_RETENTION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    MAX_RESCUES_FIELD_NUMBER: _ClassVar[int]
    MERGE_FIELD_NUMBER: _ClassVar[int]
    MERGE_KEY_FIELD_NUMBER: _ClassVar[int]
    ON_PARENT_FAILURE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RETRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    RUN_AT_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    after: _containers.RepeatedScalarFieldContainer[str]
    args: str
    delay: _duration_pb2.Duration
    fairness_key: str
    group_key: str
    headers: _containers.ScalarMap[str, str]
    idempotency_key: str
    idempotency_retention: _duration_pb2.Duration
    kind: str
    max_attempts: int
    max_rescues: int
    merge: str
    merge_key: str
    on_parent_failure: str
    priority: int
    queue: str
    retry_policy: RetryPolicy
    run_at: _timestamp_pb2.Timestamp
    timeout: _duration_pb2.Duration
    def __init__(self, kind: _Optional[str] = ..., args: _Optional[str] = ..., queue: _Optional[str] = ..., priority: _Optional[int] = ..., run_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., delay: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_attempts: _Optional[int] = ..., timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., headers: _Optional[_Mapping[str, str]] = ..., idempotency_key: _Optional[str] = ..., idempotency_retention: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., group_key: _Optional[str] = ..., retry_policy: _Optional[_Union[RetryPolicy, _Mapping]] = ..., max_rescues: _Optional[int] = ..., merge_key: _Optional[str] = ..., merge: _Optional[str] = ..., fairness_key: _Optional[str] = ..., after: _Optional[_Iterable[str]] = ..., on_parent_failure: _Optional[str] = ...) -> None: ...

class Kind(_message.Message):
    __slots__ = ["cap_per_key", "compact_merge", "compact_over", "counts", "disabled", "max_running", "name", "rate", "rate_per_key"]
    class CountsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    CAP_PER_KEY_FIELD_NUMBER: _ClassVar[int]
    COMPACT_MERGE_FIELD_NUMBER: _ClassVar[int]
    COMPACT_OVER_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    RATE_PER_KEY_FIELD_NUMBER: _ClassVar[int]
    cap_per_key: int
    compact_merge: str
    compact_over: int
    counts: _containers.ScalarMap[str, int]
    disabled: bool
    max_running: int
    name: str
    rate: str
    rate_per_key: str
    def __init__(self, name: _Optional[str] = ..., disabled: bool = ..., max_running: _Optional[int] = ..., counts: _Optional[_Mapping[str, int]] = ..., rate: _Optional[str] = ..., compact_over: _Optional[int] = ..., compact_merge: _Optional[str] = ..., cap_per_key: _Optional[int] = ..., rate_per_key: _Optional[str] = ...) -> None: ...

class KindServiceCompactRequest(_message.Message):
    __slots__ = ["group_key", "kind", "merge", "over"]
    GROUP_KEY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MERGE_FIELD_NUMBER: _ClassVar[int]
    OVER_FIELD_NUMBER: _ClassVar[int]
    group_key: str
    kind: str
    merge: str
    over: int
    def __init__(self, kind: _Optional[str] = ..., group_key: _Optional[str] = ..., over: _Optional[int] = ..., merge: _Optional[str] = ...) -> None: ...

class KindServiceCompactResponse(_message.Message):
    __slots__ = ["compacted", "groups", "jobs", "refused"]
    COMPACTED_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    compacted: _containers.RepeatedCompositeFieldContainer[CompactedGroup]
    groups: int
    jobs: int
    refused: _containers.RepeatedCompositeFieldContainer[RefusedGroup]
    def __init__(self, groups: _Optional[int] = ..., jobs: _Optional[int] = ..., compacted: _Optional[_Iterable[_Union[CompactedGroup, _Mapping]]] = ..., refused: _Optional[_Iterable[_Union[RefusedGroup, _Mapping]]] = ...) -> None: ...

class KindServiceDisableRequest(_message.Message):
    __slots__ = ["kind"]
    KIND_FIELD_NUMBER: _ClassVar[int]
    kind: str
    def __init__(self, kind: _Optional[str] = ...) -> None: ...

class KindServiceDisableResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class KindServiceEnableRequest(_message.Message):
    __slots__ = ["kind"]
    KIND_FIELD_NUMBER: _ClassVar[int]
    kind: str
    def __init__(self, kind: _Optional[str] = ...) -> None: ...

class KindServiceEnableResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class KindServiceLineageRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class KindServiceLineageResponse(_message.Message):
    __slots__ = ["compacted_from", "compacted_into"]
    COMPACTED_FROM_FIELD_NUMBER: _ClassVar[int]
    COMPACTED_INTO_FIELD_NUMBER: _ClassVar[int]
    compacted_from: _containers.RepeatedScalarFieldContainer[str]
    compacted_into: str
    def __init__(self, compacted_from: _Optional[_Iterable[str]] = ..., compacted_into: _Optional[str] = ...) -> None: ...

class KindServiceListRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class KindServiceListResponse(_message.Message):
    __slots__ = ["kinds"]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    kinds: _containers.RepeatedCompositeFieldContainer[Kind]
    def __init__(self, kinds: _Optional[_Iterable[_Union[Kind, _Mapping]]] = ...) -> None: ...

class KindServiceSetRequest(_message.Message):
    __slots__ = ["cap_per_key", "compact_merge", "compact_over", "kind", "max_running", "rate", "rate_per_key"]
    CAP_PER_KEY_FIELD_NUMBER: _ClassVar[int]
    COMPACT_MERGE_FIELD_NUMBER: _ClassVar[int]
    COMPACT_OVER_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    RATE_PER_KEY_FIELD_NUMBER: _ClassVar[int]
    cap_per_key: int
    compact_merge: str
    compact_over: int
    kind: str
    max_running: int
    rate: str
    rate_per_key: str
    def __init__(self, kind: _Optional[str] = ..., max_running: _Optional[int] = ..., rate: _Optional[str] = ..., compact_over: _Optional[int] = ..., compact_merge: _Optional[str] = ..., cap_per_key: _Optional[int] = ..., rate_per_key: _Optional[str] = ...) -> None: ...

class KindServiceSetResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListKeysRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListKeysResponse(_message.Message):
    __slots__ = ["keys"]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[APIKey]
    def __init__(self, keys: _Optional[_Iterable[_Union[APIKey, _Mapping]]] = ...) -> None: ...

class ListNodesRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListNodesResponse(_message.Message):
    __slots__ = ["nodes"]
    NODES_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[Node]
    def __init__(self, nodes: _Optional[_Iterable[_Union[Node, _Mapping]]] = ...) -> None: ...

class ListReplaysRequest(_message.Message):
    __slots__ = ["cursor", "limit", "original_id", "replayed_by", "since", "source_job_id", "until"]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_ID_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_BY_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    cursor: str
    limit: int
    original_id: str
    replayed_by: str
    since: _timestamp_pb2.Timestamp
    source_job_id: str
    until: _timestamp_pb2.Timestamp
    def __init__(self, source_job_id: _Optional[str] = ..., original_id: _Optional[str] = ..., replayed_by: _Optional[str] = ..., since: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., until: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., cursor: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ListReplaysResponse(_message.Message):
    __slots__ = ["next_cursor", "replays"]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    REPLAYS_FIELD_NUMBER: _ClassVar[int]
    next_cursor: str
    replays: _containers.RepeatedCompositeFieldContainer[ReplayRecord]
    def __init__(self, replays: _Optional[_Iterable[_Union[ReplayRecord, _Mapping]]] = ..., next_cursor: _Optional[str] = ...) -> None: ...

class ListRequest(_message.Message):
    __slots__ = ["ascending", "created_after", "created_before", "cursor", "error_codes", "fairness_keys", "kinds", "limit", "queues", "states"]
    ASCENDING_FIELD_NUMBER: _ClassVar[int]
    CREATED_AFTER_FIELD_NUMBER: _ClassVar[int]
    CREATED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODES_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_KEYS_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    ascending: bool
    created_after: _timestamp_pb2.Timestamp
    created_before: _timestamp_pb2.Timestamp
    cursor: str
    error_codes: _containers.RepeatedScalarFieldContainer[str]
    fairness_keys: _containers.RepeatedScalarFieldContainer[str]
    kinds: _containers.RepeatedScalarFieldContainer[str]
    limit: int
    queues: _containers.RepeatedScalarFieldContainer[str]
    states: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, states: _Optional[_Iterable[str]] = ..., queues: _Optional[_Iterable[str]] = ..., kinds: _Optional[_Iterable[str]] = ..., cursor: _Optional[str] = ..., limit: _Optional[int] = ..., ascending: bool = ..., created_after: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., created_before: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., error_codes: _Optional[_Iterable[str]] = ..., fairness_keys: _Optional[_Iterable[str]] = ...) -> None: ...

class ListResponse(_message.Message):
    __slots__ = ["jobs", "next_cursor"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    next_cursor: str
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ..., next_cursor: _Optional[str] = ...) -> None: ...

class ListStreamsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListStreamsResponse(_message.Message):
    __slots__ = ["streams"]
    STREAMS_FIELD_NUMBER: _ClassVar[int]
    streams: _containers.RepeatedCompositeFieldContainer[Stream]
    def __init__(self, streams: _Optional[_Iterable[_Union[Stream, _Mapping]]] = ...) -> None: ...

class ListWorkersRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListWorkersResponse(_message.Message):
    __slots__ = ["workers"]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    workers: _containers.RepeatedCompositeFieldContainer[Worker]
    def __init__(self, workers: _Optional[_Iterable[_Union[Worker, _Mapping]]] = ...) -> None: ...

class ListWorkflowsRequest(_message.Message):
    __slots__ = ["ascending", "cursor", "limit", "name", "states"]
    ASCENDING_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    ascending: bool
    cursor: str
    limit: int
    name: str
    states: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., states: _Optional[_Iterable[str]] = ..., cursor: _Optional[str] = ..., limit: _Optional[int] = ..., ascending: bool = ...) -> None: ...

class ListWorkflowsResponse(_message.Message):
    __slots__ = ["next_cursor", "workflows"]
    NEXT_CURSOR_FIELD_NUMBER: _ClassVar[int]
    WORKFLOWS_FIELD_NUMBER: _ClassVar[int]
    next_cursor: str
    workflows: _containers.RepeatedCompositeFieldContainer[Workflow]
    def __init__(self, workflows: _Optional[_Iterable[_Union[Workflow, _Mapping]]] = ..., next_cursor: _Optional[str] = ...) -> None: ...

class Node(_message.Message):
    __slots__ = ["heartbeat_at", "holding", "host", "id", "idle", "leader", "pid", "started_at"]
    HEARTBEAT_AT_FIELD_NUMBER: _ClassVar[int]
    HOLDING_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    IDLE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    heartbeat_at: _timestamp_pb2.Timestamp
    holding: bool
    host: str
    id: str
    idle: bool
    leader: bool
    pid: int
    started_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., host: _Optional[str] = ..., pid: _Optional[int] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., heartbeat_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., leader: bool = ..., holding: bool = ..., idle: bool = ...) -> None: ...

class Outcome(_message.Message):
    __slots__ = ["complete", "fail", "release", "snooze", "suspend"]
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    FAIL_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    SNOOZE_FIELD_NUMBER: _ClassVar[int]
    SUSPEND_FIELD_NUMBER: _ClassVar[int]
    complete: CompleteRequest
    fail: FailRequest
    release: ReleaseRequest
    snooze: SnoozeRequest
    suspend: SuspendRequest
    def __init__(self, complete: _Optional[_Union[CompleteRequest, _Mapping]] = ..., fail: _Optional[_Union[FailRequest, _Mapping]] = ..., release: _Optional[_Union[ReleaseRequest, _Mapping]] = ..., snooze: _Optional[_Union[SnoozeRequest, _Mapping]] = ..., suspend: _Optional[_Union[SuspendRequest, _Mapping]] = ...) -> None: ...

class ParentResult(_message.Message):
    __slots__ = ["error", "expired", "finished_at", "id", "kind", "outcome", "result", "state", "step"]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EXPIRED_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    error: str
    expired: bool
    finished_at: _timestamp_pb2.Timestamp
    id: str
    kind: str
    outcome: str
    result: str
    state: str
    step: str
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[str] = ..., outcome: _Optional[str] = ..., state: _Optional[str] = ..., result: _Optional[str] = ..., error: _Optional[str] = ..., finished_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., expired: bool = ..., step: _Optional[str] = ...) -> None: ...

class ParentResultsRequest(_message.Message):
    __slots__ = ["id", "lease_token"]
    ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    id: str
    lease_token: int
    def __init__(self, id: _Optional[str] = ..., lease_token: _Optional[int] = ...) -> None: ...

class ParentResultsResponse(_message.Message):
    __slots__ = ["parents"]
    PARENTS_FIELD_NUMBER: _ClassVar[int]
    parents: _containers.RepeatedCompositeFieldContainer[ParentResult]
    def __init__(self, parents: _Optional[_Iterable[_Union[ParentResult, _Mapping]]] = ...) -> None: ...

class PauseRequest(_message.Message):
    __slots__ = ["queue"]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class PauseResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class Queue(_message.Message):
    __slots__ = ["awaiting_compute", "cap_per_key", "computing", "counts", "disabled", "held_by_governor", "key_weights", "max_running", "name", "paused", "rate", "rate_per_key", "weight"]
    class CountsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class KeyWeightsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    AWAITING_COMPUTE_FIELD_NUMBER: _ClassVar[int]
    CAP_PER_KEY_FIELD_NUMBER: _ClassVar[int]
    COMPUTING_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    HELD_BY_GOVERNOR_FIELD_NUMBER: _ClassVar[int]
    KEY_WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    RATE_PER_KEY_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    awaiting_compute: int
    cap_per_key: int
    computing: int
    counts: _containers.ScalarMap[str, int]
    disabled: int
    held_by_governor: bool
    key_weights: _containers.ScalarMap[str, int]
    max_running: int
    name: str
    paused: bool
    rate: str
    rate_per_key: str
    weight: int
    def __init__(self, name: _Optional[str] = ..., paused: bool = ..., max_running: _Optional[int] = ..., counts: _Optional[_Mapping[str, int]] = ..., weight: _Optional[int] = ..., awaiting_compute: _Optional[int] = ..., disabled: _Optional[int] = ..., rate: _Optional[str] = ..., computing: _Optional[int] = ..., held_by_governor: bool = ..., cap_per_key: _Optional[int] = ..., rate_per_key: _Optional[str] = ..., key_weights: _Optional[_Mapping[str, int]] = ...) -> None: ...

class QueueServiceListRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class QueueServiceListResponse(_message.Message):
    __slots__ = ["queues"]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    queues: _containers.RepeatedCompositeFieldContainer[Queue]
    def __init__(self, queues: _Optional[_Iterable[_Union[Queue, _Mapping]]] = ...) -> None: ...

class QueueServiceSetRequest(_message.Message):
    __slots__ = ["cap_per_key", "key_weights", "max_running", "queue", "rate", "rate_per_key", "weight"]
    class KeyWeightsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    CAP_PER_KEY_FIELD_NUMBER: _ClassVar[int]
    KEY_WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    RATE_PER_KEY_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    cap_per_key: int
    key_weights: _containers.ScalarMap[str, int]
    max_running: int
    queue: str
    rate: str
    rate_per_key: str
    weight: int
    def __init__(self, queue: _Optional[str] = ..., weight: _Optional[int] = ..., max_running: _Optional[int] = ..., rate: _Optional[str] = ..., cap_per_key: _Optional[int] = ..., rate_per_key: _Optional[str] = ..., key_weights: _Optional[_Mapping[str, int]] = ...) -> None: ...

class QueueServiceSetResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class RefusedGroup(_message.Message):
    __slots__ = ["group_key", "job_id", "reason"]
    GROUP_KEY_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    group_key: str
    job_id: str
    reason: str
    def __init__(self, group_key: _Optional[str] = ..., job_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ReleaseRequest(_message.Message):
    __slots__ = ["id", "lease_token", "reason"]
    ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    id: str
    lease_token: int
    reason: str
    def __init__(self, id: _Optional[str] = ..., lease_token: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class ReleaseResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ReplayManyRequest(_message.Message):
    __slots__ = ["filter", "limit"]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    filter: DeadLetterFilter
    limit: int
    def __init__(self, filter: _Optional[_Union[DeadLetterFilter, _Mapping]] = ..., limit: _Optional[int] = ...) -> None: ...

class ReplayManyResponse(_message.Message):
    __slots__ = ["jobs", "replayed_by", "skipped"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_BY_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    replayed_by: str
    skipped: int
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ..., replayed_by: _Optional[str] = ..., skipped: _Optional[int] = ...) -> None: ...

class ReplayRecord(_message.Message):
    __slots__ = ["action", "forced", "id", "new_job_id", "original_id", "reason", "replayed_at", "replayed_by", "source_job_id"]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    FORCED_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    NEW_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_AT_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_BY_FIELD_NUMBER: _ClassVar[int]
    SOURCE_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    action: str
    forced: bool
    id: int
    new_job_id: str
    original_id: str
    reason: str
    replayed_at: _timestamp_pb2.Timestamp
    replayed_by: str
    source_job_id: str
    def __init__(self, id: _Optional[int] = ..., source_job_id: _Optional[str] = ..., new_job_id: _Optional[str] = ..., original_id: _Optional[str] = ..., replayed_by: _Optional[str] = ..., replayed_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., action: _Optional[str] = ..., forced: bool = ...) -> None: ...

class ReplayRequest(_message.Message):
    __slots__ = ["again", "id", "reason"]
    AGAIN_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    again: bool
    id: str
    reason: str
    def __init__(self, id: _Optional[str] = ..., again: bool = ..., reason: _Optional[str] = ...) -> None: ...

class ReplayResponse(_message.Message):
    __slots__ = ["job", "replayed_by"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_BY_FIELD_NUMBER: _ClassVar[int]
    job: Job
    replayed_by: str
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., replayed_by: _Optional[str] = ...) -> None: ...

class ReplaySummary(_message.Message):
    __slots__ = ["count", "last_job_id", "last_replayed_at"]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    LAST_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_REPLAYED_AT_FIELD_NUMBER: _ClassVar[int]
    count: int
    last_job_id: str
    last_replayed_at: _timestamp_pb2.Timestamp
    def __init__(self, count: _Optional[int] = ..., last_job_id: _Optional[str] = ..., last_replayed_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ReportProgressRequest(_message.Message):
    __slots__ = ["id", "lease_token", "message", "percent"]
    ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PERCENT_FIELD_NUMBER: _ClassVar[int]
    id: str
    lease_token: int
    message: str
    percent: int
    def __init__(self, id: _Optional[str] = ..., lease_token: _Optional[int] = ..., percent: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class ReportProgressResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ReportRequest(_message.Message):
    __slots__ = ["outcomes", "renewals"]
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    RENEWALS_FIELD_NUMBER: _ClassVar[int]
    outcomes: _containers.RepeatedCompositeFieldContainer[Outcome]
    renewals: _containers.RepeatedCompositeFieldContainer[ExtendLeaseRequest]
    def __init__(self, outcomes: _Optional[_Iterable[_Union[Outcome, _Mapping]]] = ..., renewals: _Optional[_Iterable[_Union[ExtendLeaseRequest, _Mapping]]] = ...) -> None: ...

class ReportResponse(_message.Message):
    __slots__ = ["outcomes", "renewals"]
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    RENEWALS_FIELD_NUMBER: _ClassVar[int]
    outcomes: _containers.RepeatedCompositeFieldContainer[Verdict]
    renewals: _containers.RepeatedCompositeFieldContainer[Verdict]
    def __init__(self, outcomes: _Optional[_Iterable[_Union[Verdict, _Mapping]]] = ..., renewals: _Optional[_Iterable[_Union[Verdict, _Mapping]]] = ...) -> None: ...

class ReportStreamRequest(_message.Message):
    __slots__ = ["id", "report"]
    ID_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    id: int
    report: ReportRequest
    def __init__(self, id: _Optional[int] = ..., report: _Optional[_Union[ReportRequest, _Mapping]] = ...) -> None: ...

class ReportStreamResponse(_message.Message):
    __slots__ = ["id", "report"]
    ID_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    id: int
    report: ReportResponse
    def __init__(self, id: _Optional[int] = ..., report: _Optional[_Union[ReportResponse, _Mapping]] = ...) -> None: ...

class ResumeRequest(_message.Message):
    __slots__ = ["queue"]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class ResumeResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class RetryPolicy(_message.Message):
    __slots__ = ["base", "cap", "jitter", "multiplier", "retry_business_errors"]
    BASE_FIELD_NUMBER: _ClassVar[int]
    CAP_FIELD_NUMBER: _ClassVar[int]
    JITTER_FIELD_NUMBER: _ClassVar[int]
    MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    RETRY_BUSINESS_ERRORS_FIELD_NUMBER: _ClassVar[int]
    base: _duration_pb2.Duration
    cap: _duration_pb2.Duration
    jitter: float
    multiplier: float
    retry_business_errors: bool
    def __init__(self, base: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., multiplier: _Optional[float] = ..., cap: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., jitter: _Optional[float] = ..., retry_business_errors: bool = ...) -> None: ...

class RevokeKeyRequest(_message.Message):
    __slots__ = ["id_or_name"]
    ID_OR_NAME_FIELD_NUMBER: _ClassVar[int]
    id_or_name: str
    def __init__(self, id_or_name: _Optional[str] = ...) -> None: ...

class RevokeKeyResponse(_message.Message):
    __slots__ = ["key"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: APIKey
    def __init__(self, key: _Optional[_Union[APIKey, _Mapping]] = ...) -> None: ...

class Schedule(_message.Message):
    __slots__ = ["args", "catch_up", "created_at", "cron", "every", "fixed_delay", "headers", "jitter", "kind", "last_fire_at", "last_job_id", "last_manual_fire_at", "last_manual_job_id", "last_workflow_id", "max_attempts", "name", "next_fire_at", "overlap", "paused", "priority", "queue", "source", "timeout", "tz", "updated_at", "workflow"]
    class HeadersEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ARGS_FIELD_NUMBER: _ClassVar[int]
    CATCH_UP_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CRON_FIELD_NUMBER: _ClassVar[int]
    EVERY_FIELD_NUMBER: _ClassVar[int]
    FIXED_DELAY_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    JITTER_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LAST_FIRE_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_MANUAL_FIRE_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_MANUAL_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIRE_AT_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    TZ_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_FIELD_NUMBER: _ClassVar[int]
    args: str
    catch_up: str
    created_at: _timestamp_pb2.Timestamp
    cron: str
    every: _duration_pb2.Duration
    fixed_delay: _duration_pb2.Duration
    headers: _containers.ScalarMap[str, str]
    jitter: _duration_pb2.Duration
    kind: str
    last_fire_at: _timestamp_pb2.Timestamp
    last_job_id: str
    last_manual_fire_at: _timestamp_pb2.Timestamp
    last_manual_job_id: str
    last_workflow_id: str
    max_attempts: int
    name: str
    next_fire_at: _timestamp_pb2.Timestamp
    overlap: str
    paused: bool
    priority: int
    queue: str
    source: str
    timeout: _duration_pb2.Duration
    tz: str
    updated_at: _timestamp_pb2.Timestamp
    workflow: EnqueueWorkflowRequest
    def __init__(self, name: _Optional[str] = ..., cron: _Optional[str] = ..., every: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., fixed_delay: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., tz: _Optional[str] = ..., kind: _Optional[str] = ..., args: _Optional[str] = ..., queue: _Optional[str] = ..., priority: _Optional[int] = ..., max_attempts: _Optional[int] = ..., timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., headers: _Optional[_Mapping[str, str]] = ..., catch_up: _Optional[str] = ..., overlap: _Optional[str] = ..., jitter: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., paused: bool = ..., source: _Optional[str] = ..., last_fire_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., next_fire_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_job_id: _Optional[str] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_manual_fire_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_manual_job_id: _Optional[str] = ..., workflow: _Optional[_Union[EnqueueWorkflowRequest, _Mapping]] = ..., last_workflow_id: _Optional[str] = ...) -> None: ...

class ScheduleServiceAddRequest(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class ScheduleServiceAddResponse(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class ScheduleServiceListRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ScheduleServiceListResponse(_message.Message):
    __slots__ = ["schedules"]
    SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    schedules: _containers.RepeatedCompositeFieldContainer[Schedule]
    def __init__(self, schedules: _Optional[_Iterable[_Union[Schedule, _Mapping]]] = ...) -> None: ...

class ScheduleServicePauseRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ScheduleServicePauseResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ScheduleServiceRemoveRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ScheduleServiceRemoveResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ScheduleServiceResumeRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ScheduleServiceResumeResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ScheduleServiceRunRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ScheduleServiceRunResponse(_message.Message):
    __slots__ = ["job"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class ServerInfo(_message.Message):
    __slots__ = ["commit", "commit_time", "go_version", "input_limits", "modified", "platform", "schema_version", "store", "version"]
    COMMIT_FIELD_NUMBER: _ClassVar[int]
    COMMIT_TIME_FIELD_NUMBER: _ClassVar[int]
    GO_VERSION_FIELD_NUMBER: _ClassVar[int]
    INPUT_LIMITS_FIELD_NUMBER: _ClassVar[int]
    MODIFIED_FIELD_NUMBER: _ClassVar[int]
    PLATFORM_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    commit: str
    commit_time: _timestamp_pb2.Timestamp
    go_version: str
    input_limits: InputLimits
    modified: bool
    platform: str
    schema_version: int
    store: str
    version: str
    def __init__(self, version: _Optional[str] = ..., commit: _Optional[str] = ..., commit_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., modified: bool = ..., go_version: _Optional[str] = ..., platform: _Optional[str] = ..., store: _Optional[str] = ..., schema_version: _Optional[int] = ..., input_limits: _Optional[_Union[InputLimits, _Mapping]] = ...) -> None: ...

class ServerServiceInfoRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ServerServiceInfoResponse(_message.Message):
    __slots__ = ["server"]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    server: ServerInfo
    def __init__(self, server: _Optional[_Union[ServerInfo, _Mapping]] = ...) -> None: ...

class SnoozeRequest(_message.Message):
    __slots__ = ["delay", "id", "lease_token"]
    DELAY_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    delay: _duration_pb2.Duration
    id: str
    lease_token: int
    def __init__(self, id: _Optional[str] = ..., lease_token: _Optional[int] = ..., delay: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class SnoozeResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class SpawnJob(_message.Message):
    __slots__ = ["after_steps", "job", "step"]
    AFTER_STEPS_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    after_steps: _containers.RepeatedScalarFieldContainer[str]
    job: JobSpec
    step: str
    def __init__(self, job: _Optional[_Union[JobSpec, _Mapping]] = ..., step: _Optional[str] = ..., after_steps: _Optional[_Iterable[str]] = ...) -> None: ...

class SpawnRequest(_message.Message):
    __slots__ = ["id", "jobs", "lease_token"]
    ID_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    id: str
    jobs: _containers.RepeatedCompositeFieldContainer[SpawnJob]
    lease_token: int
    def __init__(self, id: _Optional[str] = ..., lease_token: _Optional[int] = ..., jobs: _Optional[_Iterable[_Union[SpawnJob, _Mapping]]] = ...) -> None: ...

class SpawnResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[EnqueueResponse]
    def __init__(self, results: _Optional[_Iterable[_Union[EnqueueResponse, _Mapping]]] = ...) -> None: ...

class Stream(_message.Message):
    __slots__ = ["completed", "credit", "failed", "id", "in_flight", "kinds", "opened_at", "pushed", "queue", "queues", "released", "worker"]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    CREDIT_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    OPENED_AT_FIELD_NUMBER: _ClassVar[int]
    PUSHED_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RELEASED_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    completed: int
    credit: int
    failed: int
    id: str
    in_flight: int
    kinds: _containers.RepeatedScalarFieldContainer[str]
    opened_at: _timestamp_pb2.Timestamp
    pushed: int
    queue: str
    queues: _containers.RepeatedScalarFieldContainer[str]
    released: int
    worker: str
    def __init__(self, id: _Optional[str] = ..., worker: _Optional[str] = ..., queue: _Optional[str] = ..., kinds: _Optional[_Iterable[str]] = ..., credit: _Optional[int] = ..., in_flight: _Optional[int] = ..., pushed: _Optional[int] = ..., completed: _Optional[int] = ..., failed: _Optional[int] = ..., released: _Optional[int] = ..., opened_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., queues: _Optional[_Iterable[str]] = ...) -> None: ...

class StreamJobsRequest(_message.Message):
    __slots__ = ["batch_kinds", "credit", "fetch_fields", "fetch_parent_results", "kind_concurrency", "kinds", "lease_timeout", "queue", "queues", "worker"]
    class KindConcurrencyEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    BATCH_KINDS_FIELD_NUMBER: _ClassVar[int]
    CREDIT_FIELD_NUMBER: _ClassVar[int]
    FETCH_FIELDS_FIELD_NUMBER: _ClassVar[int]
    FETCH_PARENT_RESULTS_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    KIND_CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    LEASE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    batch_kinds: _containers.RepeatedCompositeFieldContainer[BatchKind]
    credit: int
    fetch_fields: _containers.RepeatedScalarFieldContainer[str]
    fetch_parent_results: bool
    kind_concurrency: _containers.ScalarMap[str, int]
    kinds: _containers.RepeatedScalarFieldContainer[str]
    lease_timeout: _duration_pb2.Duration
    queue: str
    queues: _containers.RepeatedScalarFieldContainer[str]
    worker: str
    def __init__(self, worker: _Optional[str] = ..., queue: _Optional[str] = ..., kinds: _Optional[_Iterable[str]] = ..., credit: _Optional[int] = ..., lease_timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., fetch_fields: _Optional[_Iterable[str]] = ..., queues: _Optional[_Iterable[str]] = ..., kind_concurrency: _Optional[_Mapping[str, int]] = ..., batch_kinds: _Optional[_Iterable[_Union[BatchKind, _Mapping]]] = ..., fetch_parent_results: bool = ...) -> None: ...

class StreamJobsResponse(_message.Message):
    __slots__ = ["jobs", "keepalive"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    KEEPALIVE_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[ActivatedJob]
    keepalive: _duration_pb2.Duration
    def __init__(self, jobs: _Optional[_Iterable[_Union[ActivatedJob, _Mapping]]] = ..., keepalive: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class SuspendRequest(_message.Message):
    __slots__ = ["checkpoint", "deadline", "id", "lease_token", "until"]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    checkpoint: str
    deadline: _timestamp_pb2.Timestamp
    id: str
    lease_token: int
    until: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., lease_token: _Optional[int] = ..., checkpoint: _Optional[str] = ..., until: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., deadline: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class SuspendResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class Verdict(_message.Message):
    __slots__ = ["code", "fail", "lease_expires_at", "message"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    FAIL_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: str
    fail: FailResponse
    lease_expires_at: _timestamp_pb2.Timestamp
    message: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., fail: _Optional[_Union[FailResponse, _Mapping]] = ..., lease_expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Worker(_message.Message):
    __slots__ = ["activated", "batch_kinds", "held", "kinds", "last_seen_at", "name", "open_streams", "queue", "waiting_polls"]
    ACTIVATED_FIELD_NUMBER: _ClassVar[int]
    BATCH_KINDS_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_AT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPEN_STREAMS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    WAITING_POLLS_FIELD_NUMBER: _ClassVar[int]
    activated: int
    batch_kinds: _containers.RepeatedScalarFieldContainer[str]
    held: bool
    kinds: _containers.RepeatedScalarFieldContainer[str]
    last_seen_at: _timestamp_pb2.Timestamp
    name: str
    open_streams: int
    queue: str
    waiting_polls: int
    def __init__(self, name: _Optional[str] = ..., queue: _Optional[str] = ..., kinds: _Optional[_Iterable[str]] = ..., last_seen_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., open_streams: _Optional[int] = ..., waiting_polls: _Optional[int] = ..., activated: _Optional[int] = ..., held: bool = ..., batch_kinds: _Optional[_Iterable[str]] = ...) -> None: ...

class Workflow(_message.Message):
    __slots__ = ["created_at", "finished_at", "id", "name", "started_at", "state", "step_states", "steps"]
    class StepStatesEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    STEP_STATES_FIELD_NUMBER: _ClassVar[int]
    created_at: _timestamp_pb2.Timestamp
    finished_at: _timestamp_pb2.Timestamp
    id: str
    name: str
    started_at: _timestamp_pb2.Timestamp
    state: str
    step_states: _containers.ScalarMap[str, int]
    steps: int
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., state: _Optional[str] = ..., steps: _Optional[int] = ..., step_states: _Optional[_Mapping[str, int]] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class WorkflowStep(_message.Message):
    __slots__ = ["job", "name"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    job: JobSpec
    name: str
    def __init__(self, name: _Optional[str] = ..., job: _Optional[_Union[JobSpec, _Mapping]] = ...) -> None: ...

class WorkflowStepStatus(_message.Message):
    __slots__ = ["after", "job"]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    after: _containers.RepeatedScalarFieldContainer[str]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., after: _Optional[_Iterable[str]] = ...) -> None: ...
