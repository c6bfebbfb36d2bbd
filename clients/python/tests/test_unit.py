"""Unit tests of the rules that need no server: texts, outcomes, errors."""

from __future__ import annotations

import asyncio
import unittest
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import grpc

from hopper import (
    BusinessError, InvalidArgument, JobTimeout, LeaseLostError, Limits, NoLimitsError, NoRetry, RetryAfter,
    RetryPolicy, Shutdown, Snooze, Suspend, Unavailable, Unimplemented, clip_text, fail_with_checkpoint, limits_of,
)
from hopper import SpawnJob, Step
from hopper.client import _spawn_request
from hopper.errors import error_of, to_hopper_error
from hopper.handler_errors import format_duration
from hopper.job import job_spec
from hopper.workflow import enqueue_request
from hopper.gen import hopper_pb2 as pb
from hopper.outcome import Ending, decide, failure
from hopper.text import error_code_problem

from .support import TEST_LIMITS


def ending(error: BaseException | None = None, *, result: object = None, cause: BaseException | None = None,
           mode: str = "stream", limits: Limits = TEST_LIMITS) -> Ending:
    return Ending("j1", 7, mode, error is not None, result, error, cause, None, limits=limits)


class TextTest(unittest.TestCase):
    def test_clip_text_fits_the_limit_in_utf8_bytes(self) -> None:
        self.assertEqual(clip_text("short", 10), "short")
        s = clip_text("é" * 100, 21)
        self.assertLessEqual(len(s.encode()), 21)
        self.assertTrue(s.endswith("…"))
        self.assertEqual(s, "é" * 9 + "…")  # 18 bytes + 3: cut at a character boundary
        self.assertEqual(clip_text("a\0b", 10), "a\ufffdb")
        self.assertEqual(clip_text("a\ud800b", 10), "a\ufffdb")

    def test_error_code_problem_as_the_server_says_it(self) -> None:
        self.assertIsNone(error_code_problem("card_declined:v1.2-x", TEST_LIMITS))
        self.assertIn("1–128 characters", error_code_problem("", TEST_LIMITS) or "")
        self.assertIn("only letters", error_code_problem("a b", TEST_LIMITS) or "")
        self.assertIn("1–4 characters", error_code_problem("abcde", replace(TEST_LIMITS, error_code_len=4)) or "")

    def test_limits_of_takes_what_the_server_served_and_nothing_else(self) -> None:
        served = pb.InputLimits(max_error_bytes=100, max_reason_bytes=50, max_progress_message_bytes=20, max_error_code_len=8)
        served.max_run_at_future.FromSeconds(60)
        self.assertEqual(limits_of(served, "http://h"), Limits(100, 50, 20, 8, 60.0))
        with self.assertRaises(NoLimitsError) as cm:
            limits_of(None, "http://h")
        self.assertIsInstance(cm.exception, Unimplemented)
        self.assertEqual((cm.exception.url, cm.exception.limit), ("http://h", None))
        self.assertEqual(cm.exception.raw_message, "the server at http://h serves no input limits (ServerService.Info): upgrade it")
        for name in ("max_error_bytes", "max_reason_bytes", "max_progress_message_bytes", "max_error_code_len", "max_run_at_future"):
            partial = pb.InputLimits()
            partial.CopyFrom(served)
            partial.ClearField(name)
            with self.assertRaises(NoLimitsError, msg=name) as cm:
                limits_of(partial, "http://h")
            self.assertEqual(cm.exception.limit, name)
            self.assertIn(f"serves no input limit {name} ", str(cm.exception))


class WordingTest(unittest.TestCase):
    """Texts read as a Go worker's (the SDK conformance suite compares them)."""

    def test_durations_as_go_prints_them(self) -> None:
        for secs, want in [(0.3, "300ms"), (1.5, "1.5s"), (5, "5s"), (60, "1m0s"), (90, "1m30s"),
                           (7200, "2h0m0s"), (0.0005, "500µs"), (0, "0s"), (-2, "-2s")]:
            self.assertEqual(format_duration(secs), want, secs)

    def test_no_retry_and_retry_after(self) -> None:
        self.assertEqual(failure(ending(NoRetry("bad input"))).error, "not retryable: bad input")
        self.assertEqual(str(RetryAfter(7200, "busy")), "retry after 2h0m0s: busy")
        self.assertEqual(str(RetryAfter(1.5)), "retry after 1.5s")


class OutcomeTest(unittest.TestCase):
    def test_success_completes_with_the_json_result(self) -> None:
        d = decide(ending(result={"a": [1, "é"]}))
        assert d.outcome is not None
        self.assertEqual(d.outcome.complete.result, '{"a":[1,"é"]}')
        self.assertEqual(d.outcome.complete.lease_token, 7)

    def test_a_result_that_is_not_json_fails_the_attempt(self) -> None:
        d = decide(ending(result=object()))
        assert d.outcome is not None
        self.assertEqual(d.outcome.WhichOneof("outcome"), "fail")
        self.assertIn("encode result", d.outcome.fail.error)

    def test_errors_crashes_and_sdk_errors(self) -> None:
        f = failure(ending(ValueError("bad")))
        self.assertEqual((f.outcome, f.error), ("error", "ValueError: bad"))
        f = failure(ending(Exception("plain")))
        self.assertEqual(f.error, "plain")
        f = failure(ending(KeyError("k")))
        self.assertEqual(f.outcome, "panic")
        self.assertTrue(failure(ending(NoRetry("stop"))).no_retry)
        f = failure(ending(RetryAfter(timedelta(seconds=90))))
        self.assertEqual(f.retry_backoff.ToSeconds(), 90)
        self.assertEqual(f.stack, "")  # the SDK's own errors are outcomes, not faults
        f = failure(ending(Exception("")))
        self.assertEqual(f.error, "Exception with an empty message")

    def test_business_errors_carry_their_code_unless_the_server_would_refuse_it(self) -> None:
        f = failure(ending(BusinessError("card_declined", "funds")))
        self.assertEqual((f.error_code, f.error), ("card_declined", "card_declined: funds"))
        f = failure(ending(BusinessError("bad code")))
        self.assertEqual(f.error_code, "")
        self.assertIn("not a business error", f.error)

    def test_timeout_says_so_and_texts_are_clipped_to_the_limits(self) -> None:
        f = failure(ending(asyncio.CancelledError(), cause=JobTimeout(2)))
        self.assertEqual((f.outcome, f.error), ("timeout", "job execution timeout after 2s"))
        f = failure(ending(RuntimeError("x" * 1000), limits=replace(TEST_LIMITS, error_bytes=100)))
        self.assertLessEqual(len(f.error.encode()), 100)

    def test_checkpoint_error_keeps_its_inner_error_and_the_checkpoint(self) -> None:
        f = failure(ending(fail_with_checkpoint(NoRetry("part 4"), {"done": 3})))
        self.assertEqual((f.error, f.no_retry, f.checkpoint), ("not retryable: part 4", True, '{"done":3}'))

    def test_snooze_and_suspend_are_bounded(self) -> None:
        d = decide(ending(Snooze(timedelta(days=365 * 100))))
        assert d.outcome is not None
        self.assertEqual(d.outcome.snooze.delay.ToSeconds(), int(TEST_LIMITS.run_at_future))
        past = datetime(1970, 1, 2, tzinfo=timezone.utc)
        d = decide(ending(Suspend(checkpoint={"n": 1}, until=past)), now=200000.0)
        assert d.outcome is not None
        self.assertEqual((d.outcome.suspend.checkpoint, d.outcome.suspend.until.ToSeconds()), ('{"n":1}', 200000))
        d = decide(ending(Suspend()))
        assert d.outcome is not None
        self.assertFalse(d.outcome.suspend.HasField("until"))
        self.assertEqual(d.outcome.suspend.checkpoint, "")

    def test_lost_lease_and_shutdown(self) -> None:
        d = decide(ending(asyncio.CancelledError(), cause=LeaseLostError()))
        assert d.outcome is not None
        self.assertEqual(d.outcome.WhichOneof("outcome"), "release")  # frees the stream's credit
        self.assertEqual(decide(ending(asyncio.CancelledError(), cause=LeaseLostError(), mode="poll")).action, "none")
        self.assertEqual(decide(ending(asyncio.CancelledError(), cause=Shutdown())).action, "decline")
        d = decide(ending(asyncio.CancelledError(), cause=Shutdown(), mode="poll"))
        assert d.outcome is not None
        self.assertIn("released on shutdown", d.outcome.release.reason)
        d = decide(ending(result=5, cause=Shutdown()))  # a success is never thrown away
        assert d.outcome is not None
        self.assertEqual(d.outcome.complete.result, "5")

    def test_kind_policy_goes_with_each_failure(self) -> None:
        e = ending(ValueError("x"))
        e.kind_policy = RetryPolicy(base=2, retry_business_errors=True).to_proto()
        f = failure(e)
        self.assertEqual((f.retry_policy.base.ToSeconds(), f.retry_policy.retry_business_errors), (2, True))


class ErrorsTest(unittest.TestCase):
    def test_codes_map_to_classes_and_invalid_argument_names_the_field(self) -> None:
        err = error_of("invalid_argument", 'job 2: invalid idempotency_key: "x" too long')
        self.assertIsInstance(err, InvalidArgument)
        self.assertEqual(err.field, "idempotency_key")
        self.assertEqual(err.code, "invalid_argument")

    def test_a_refused_connection_is_unavailable(self) -> None:
        class Fake(grpc.RpcError):
            def code(self) -> grpc.StatusCode:
                return grpc.StatusCode.UNAVAILABLE

            def details(self) -> str:
                return "failed to connect to all addresses"

        self.assertIsInstance(to_hopper_error(Fake()), Unavailable)


class StepNamesTest(unittest.TestCase):
    def test_a_string_is_not_taken_for_a_list_of_names(self) -> None:
        with self.assertRaisesRegex(TypeError, "after_steps takes a list of names, not the string 'extract'"):
            _spawn_request("id", 1, [SpawnJob("k", after_steps="extract")])
        with self.assertRaisesRegex(TypeError, "after takes a list of names"):
            job_spec("k", after="0193")
        with self.assertRaisesRegex(TypeError, "after takes a list of names"):
            enqueue_request("w", [Step("b", "k", after="a")])
        spawn = _spawn_request("id", 1, [SpawnJob("k", after_steps=("extract", "load"))])
        self.assertEqual(["extract", "load"], list(spawn.jobs[0].after_steps))
        self.assertEqual(["a"], list(enqueue_request("w", [Step("b", "k", after=["a"])]).steps[0].job.after))


class TraceContextTest(unittest.TestCase):
    """With opentelemetry installed, a handler runs in the context its job's traceparent carries
    (faked here: Debian has no opentelemetry package)."""

    def test_the_job_headers_context_is_attached_around_a_plain_handler(self) -> None:
        from hopper import worker as wmod

        calls: list[object] = []

        class Propagate:
            @staticmethod
            def extract(headers: dict[str, str]) -> object:
                calls.append(("extract", headers["traceparent"]))
                return "ctx"

        class Context:
            @staticmethod
            def attach(ctx: object) -> object:
                calls.append(("attach", ctx))
                return "token"

            @staticmethod
            def detach(token: object) -> None:
                calls.append(("detach", token))

        saved = wmod._otel_propagate, wmod._otel_context
        wmod._otel_propagate, wmod._otel_context = Propagate, Context  # type: ignore[assignment]
        try:
            self.assertIsNone(wmod._trace_context({}))
            ctx = wmod._trace_context({"traceparent": "00-abc-def-01"})
            wmod._call_sync(lambda job: calls.append(("handler", job)), None, ctx)
        finally:
            wmod._otel_propagate, wmod._otel_context = saved
        self.assertEqual(calls, [("extract", "00-abc-def-01"), ("attach", "ctx"), ("handler", None), ("detach", "token")])


if __name__ == "__main__":
    unittest.main()
