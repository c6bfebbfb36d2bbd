"""Client and AsyncClient against a real `hopper serve`."""

from __future__ import annotations

import unittest
from datetime import datetime, timedelta, timezone

from hopper import (
    AlreadyExists, AsyncClient, Client, FailedPrecondition, InvalidArgument, NewJob, NotFound, RetryPolicy,
    Unauthenticated, Worker, NoRetry,
)

from .support import HopperServer, queue_name, wait_for_state

server: HopperServer


def setUpModule() -> None:
    global server
    server = HopperServer(api_key=True)


def tearDownModule() -> None:
    server.close()


class ClientTest(unittest.TestCase):
    def setUp(self) -> None:
        self.c = Client(server.url, api_key=server.api_key)
        self.addCleanup(self.c.close)

    def test_enqueue_sends_every_option(self) -> None:
        q = queue_name(self.id())
        run_at = datetime.now(timezone.utc) + timedelta(hours=1)
        r = self.c.enqueue(
            "email", {"to": "a@b.c"}, queue=q, priority=5, run_at=run_at, max_attempts=7, timeout=timedelta(seconds=30),
            headers={"tenant": "t1"}, idempotency_key="k-" + q, idempotency_retention=3600, group_key="g1",
            retry_policy=RetryPolicy(base=1, multiplier=2, cap=60, jitter=0.1), max_rescues=5, fairness_key="cust-1",
        )
        j = self.c.get(r.job.id)
        self.assertEqual((j.kind, j.args, j.queue, j.priority, j.state), ("email", {"to": "a@b.c"}, q, 5, "scheduled"))
        self.assertEqual((j.max_attempts, j.timeout, j.headers, j.group_key), (7, 30.0, {"tenant": "t1"}, "g1"))
        self.assertEqual((j.idempotency_key, j.max_rescues, j.fairness_key), ("k-" + q, 5, "cust-1"))
        assert j.run_at is not None
        self.assertLess(abs((j.run_at - run_at).total_seconds()), 0.001)
        again = self.c.enqueue("email", {"to": "a@b.c"}, queue=q, idempotency_key="k-" + q)
        self.assertTrue(again.existing)
        self.assertEqual(again.job.id, r.job.id)
        with self.assertRaises(AlreadyExists):
            self.c.enqueue("email", {"to": "other"}, queue=q, idempotency_key="k-" + q)

    def test_merge_key_and_delay(self) -> None:
        q = queue_name(self.id())
        a = self.c.enqueue("digest", [1], queue=q, merge_key="m", merge="append", delay=60)
        b = self.c.enqueue("digest", [2], queue=q, merge_key="m", merge="append", delay=60)
        self.assertTrue(b.merged)
        self.assertEqual(b.job.id, a.job.id)
        self.assertEqual(self.c.get(a.job.id).args, [[1], [2]])

    def test_bad_input_is_invalid_argument_naming_the_field(self) -> None:
        with self.assertRaises(InvalidArgument) as cm:
            self.c.enqueue("email", queue="bad queue!")
        self.assertEqual(cm.exception.field, "queue")
        with self.assertRaises(InvalidArgument) as cm:
            self.c.enqueue("email", max_attempts=100_000)
        self.assertEqual(cm.exception.field, "max_attempts")
        with self.assertRaises(NotFound):
            self.c.get("no-such-job")

    def test_enqueue_many_list_cancel_events(self) -> None:
        q = queue_name(self.id())
        rs = self.c.enqueue_many([NewJob("a", {"n": 1}, {"queue": q}), ("b", None, {"queue": q, "priority": 2})])
        self.assertEqual([r.job.kind for r in rs], ["a", "b"])
        page = self.c.list(queues=[q], ascending=True)
        self.assertEqual([j.kind for j in page.jobs], ["a", "b"])
        self.assertEqual(len(list(self.c.list_all(queues=[q], limit=1))), 2)
        canceled = self.c.cancel(rs[0].job.id, reason="not needed")
        self.assertEqual(canceled.state, "canceled")
        with self.assertRaises(FailedPrecondition):
            self.c.cancel(rs[0].job.id)
        h = self.c.events(rs[0].job.id)
        self.assertEqual([e.to_state for e in h.events], ["queued", "canceled"])

    def test_after_waits_for_parents(self) -> None:
        q = queue_name(self.id())
        parent = self.c.enqueue("email", queue=q, delay=3600)
        child = self.c.enqueue("email", queue=q, after=[parent.job.id], on_parent_failure="skip")
        self.assertEqual(child.job.state, "waiting")
        self.assertTrue(self.c.get(parent.job.id).has_children)
        self.c.cancel(parent.job.id, reason="not needed")
        h = self.c.events(child.job.id)
        self.assertEqual([e.to_state for e in h.events], ["waiting", "canceled"])
        self.assertIn("skipped: parent " + parent.job.id, h.events[-1].reason)
        # enqueue_many takes after too.
        many = self.c.enqueue_many([NewJob("email", None, {"queue": q, "delay": 3600})])
        both = self.c.enqueue_many([("email", None, {"queue": q, "after": [many[0].job.id]})])
        self.assertEqual(both[0].job.state, "waiting")
        with self.assertRaises(InvalidArgument) as cm:
            self.c.enqueue("email", queue=q, after=["no-such-job"])
        self.assertEqual(cm.exception.field, "after[0]")

    def test_without_the_key_the_server_refuses(self) -> None:
        with Client(server.url) as anon, self.assertRaises(Unauthenticated):
            anon.enqueue("email")


class AsyncClientTest(unittest.IsolatedAsyncioTestCase):
    async def test_dead_letters_and_replay(self) -> None:
        q = queue_name(self.id())

        async def fail(job: object) -> None:
            raise NoRetry("broken")

        async with AsyncClient(server.url, api_key=server.api_key) as c:
            r = await c.enqueue("dl", {"n": 1}, queue=q)
            async with Worker(server.url, api_key=server.api_key, handlers={"dl": fail}, queue=q):
                await wait_for_state(c, r.job.id, "failed")
            page = await c.list_dead_letters(queues=[q])
            self.assertEqual([j.id for j in page.jobs], [r.job.id])
            self.assertEqual((await c.dead_letter_stats()).count >= 1, True)
            job, by = await c.replay(r.job.id, reason="fixed")
            self.assertEqual((job.original_id, job.state, by), (r.job.id, "queued", "sdk-test"))
            with self.assertRaises(AlreadyExists):
                await c.replay(r.job.id)
            retried = await c.retry(r.job.id, again=True, args={"n": 2})
            self.assertEqual((retried.state, retried.args), ("queued", {"n": 2}))
            self.assertEqual([j.id async for j in c.list_all(queues=[q], limit=1)].count(r.job.id), 1)


if __name__ == "__main__":
    unittest.main()
