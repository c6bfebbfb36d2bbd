"""Hopper's Python SDK: enqueue jobs (Client, AsyncClient) and run them in an asyncio Worker.

See README.md (clients/python) and docs/workers-other-languages.md.
"""

from .client import (
    AsyncClient, Client, DeadLetterPage, DeadLetterStats, EnqueueResult, History, Page, Replayed, ReplaySummary, Retried,
)
from .errors import (
    Aborted, AlreadyExists, Canceled, DataLoss, DeadlineExceeded, FailedPrecondition, HopperError, Internal,
    InvalidArgument, LeaseLost, NotFound, OutOfRange, PermissionDenied, ResourceExhausted, Unauthenticated,
    Unavailable, Unimplemented, Unknown, NoLimitsError, is_refusal,
)
from .handler_errors import (
    BusinessError, CheckpointError, JobTimeout, LeaseLostError, NoRetry, RetryAfter, Shutdown, Snooze, Suspend,
    fail_with_checkpoint,
)
from .batch import Batch, BatchHandlerOptions
from .job import Job, JobAttempt, JobEvent, NewJob, ParentPolicy, ParentResult, RetryPolicy, SpawnJob
from .worker import HandlerOptions, RunningJob, SyncRunningJob, Worker, WorkerEvent
from .text import Limits, clip_text, limits_of
from .workflow import (
    BATCH_CALLBACK_STEP, BatchCounts, BatchJob, EnqueuedWorkflow, Step, StepStatus, WorkflowDetail, WorkflowInfo,
    WorkflowPage, batch_job_step, batch_steps, count_batch,
)

__all__ = [
    "AsyncClient", "Client", "DeadLetterPage", "DeadLetterStats", "EnqueueResult", "History", "Page", "Replayed",
    "ReplaySummary", "Retried",
    "Aborted", "AlreadyExists", "Canceled", "DataLoss", "DeadlineExceeded", "FailedPrecondition", "HopperError",
    "Internal", "InvalidArgument", "LeaseLost", "NotFound", "OutOfRange", "PermissionDenied", "ResourceExhausted",
    "Unauthenticated", "Unavailable", "Unimplemented", "Unknown", "NoLimitsError", "is_refusal",
    "BusinessError", "CheckpointError", "JobTimeout", "LeaseLostError", "NoRetry", "RetryAfter", "Shutdown", "Snooze",
    "Suspend", "fail_with_checkpoint",
    "Job", "JobAttempt", "JobEvent", "NewJob", "ParentPolicy", "ParentResult", "RetryPolicy", "SpawnJob",
    "Batch", "BatchHandlerOptions", "HandlerOptions", "RunningJob", "SyncRunningJob", "Worker", "WorkerEvent",
    "Limits", "clip_text", "limits_of",
    "BATCH_CALLBACK_STEP", "BatchCounts", "BatchJob", "EnqueuedWorkflow", "Step", "StepStatus", "WorkflowDetail",
    "WorkflowInfo", "WorkflowPage", "batch_job_step", "batch_steps", "count_batch",
]
