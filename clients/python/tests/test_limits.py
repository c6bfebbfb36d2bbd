"""Limits served, not copied: the worker takes its input limits only from its server
(ServerService.Info). A server that serves none gets no job taken, against a fake server that
answers Info as told and records every call."""

from __future__ import annotations

import asyncio
import logging
import unittest
from typing import Any

import grpc

from hopper import NoLimitsError, RunningJob, Worker
from hopper.gen import hopper_pb2 as pb

from .support import eventually


class _FakeServer(grpc.GenericRpcHandler):
    """_FakeServer answers ServerService.Info with info (None: it has no ServerService) and
    nothing else; it records the methods called."""

    def __init__(self, info: pb.ServerServiceInfoResponse | None) -> None:
        self.info = info
        self.called: list[str] = []

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method: str = details.method  # type: ignore[attr-defined]
        self.called.append(method)
        if method != "/hopper.v1.ServerService/Info" or self.info is None:
            return None  # UNIMPLEMENTED
        info = self.info

        async def answer(req: pb.ServerServiceInfoRequest, ctx: Any) -> pb.ServerServiceInfoResponse:
            return info

        return grpc.unary_unary_rpc_method_handler(
            answer, request_deserializer=pb.ServerServiceInfoRequest.FromString,
            response_serializer=pb.ServerServiceInfoResponse.SerializeToString)


def _served(**limits: Any) -> pb.ServerServiceInfoResponse:
    l = pb.InputLimits(**{"max_error_bytes": 100, "max_reason_bytes": 50, "max_progress_message_bytes": 20,
                          "max_error_code_len": 8, **limits})
    l.max_run_at_future.FromSeconds(3600)
    return pb.ServerServiceInfoResponse(server=pb.ServerInfo(version="test", input_limits=l))


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


class NoLimitsTest(unittest.IsolatedAsyncioTestCase):
    """A server that serves no input limits (none at all, one left 0, or no ServerService)
    stops the worker before it asks for any job, with a NoLimitsError as worker.error, said
    once in the log, in each mode."""

    async def check(self, info: pb.ServerServiceInfoResponse | None, limit: str | None, mode: Any) -> None:
        fake = _FakeServer(info)
        srv = grpc.aio.server()
        srv.add_generic_rpc_handlers((fake,))
        port = srv.add_insecure_port("127.0.0.1:0")
        await srv.start()
        self.addAsyncCleanup(srv.stop, None)
        url = f"http://127.0.0.1:{port}"
        ran = 0

        async def any_job(job: RunningJob) -> Any:
            nonlocal ran
            ran += 1

        log = logging.getLogger(f"hopper.test.nolimits.{id(fake)}")
        records = _Records()
        log.addHandler(records)
        w = Worker(url, handlers={"any": any_job}, mode=mode, logger=log)
        await w.start()
        self.addAsyncCleanup(w.stop, 0)

        async def stopped() -> bool:
            return w.error is not None

        await eventually(stopped, "the worker to stop")
        err = w.error
        self.assertIsInstance(err, NoLimitsError)
        assert isinstance(err, NoLimitsError)
        self.assertEqual((err.url, err.limit), (url, limit))
        self.assertRegex(str(err), r"the server at \S+ serves no input limits? ?\S* \(ServerService\.Info\): upgrade it")
        await asyncio.sleep(0.2)  # room for a wrong call
        self.assertEqual(set(fake.called), {"/hopper.v1.ServerService/Info"}, "no job asked for")
        self.assertEqual(ran, 0)
        self.assertEqual(sum("serves no input limit" in line for line in records.lines), 1, records.lines)

    async def test_no_input_limits(self) -> None:
        for mode in ("stream", "poll"):
            with self.subTest(mode=mode):
                await self.check(pb.ServerServiceInfoResponse(server=pb.ServerInfo(version="old")), None, mode)

    async def test_a_limit_left_0(self) -> None:
        for mode in ("stream", "poll"):
            with self.subTest(mode=mode):
                await self.check(_served(max_reason_bytes=0), "max_reason_bytes", mode)

    async def test_no_server_service(self) -> None:
        for mode in ("stream", "poll"):
            with self.subTest(mode=mode):
                await self.check(None, None, mode)

    async def test_served_limits_let_it_ask_for_jobs(self) -> None:
        """The control: with every limit served the same fake server is asked for jobs."""
        fake = _FakeServer(_served())
        srv = grpc.aio.server()
        srv.add_generic_rpc_handlers((fake,))
        port = srv.add_insecure_port("127.0.0.1:0")
        await srv.start()
        self.addAsyncCleanup(srv.stop, None)
        w = Worker(f"http://127.0.0.1:{port}", handlers={"any": lambda job: None}, mode="poll")
        await w.start()
        self.addAsyncCleanup(w.stop, 0)

        async def asked() -> bool:
            return "/hopper.v1.WorkerService/Activate" in fake.called

        await eventually(asked, "a poll for jobs")
        self.assertIsNone(w.error)
        self.assertEqual(w._limits.reason_bytes if w._limits else None, 50)
