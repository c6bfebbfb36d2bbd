"""examples/python-worker: its enqueuer and worker, as programs, against a real `hopper serve`;
SIGTERM drains the worker and it exits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import unittest
from pathlib import Path

from hopper import Client

from .support import HopperServer

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "python-worker"


class ExampleTest(unittest.TestCase):
    def test_enqueue_then_work_then_sigterm(self) -> None:
        s = HopperServer()
        self.addCleanup(s.close)
        env = {**os.environ, "HOPPER_URL": s.url, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
        out = subprocess.run([sys.executable, str(EXAMPLE / "enqueue.py")], env=env, check=True, capture_output=True, text=True).stdout
        self.assertEqual(out.count("enqueued"), 10)
        worker = subprocess.Popen([sys.executable, str(EXAMPLE / "worker.py"), "--mode", "poll"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        with Client(s.url) as c:
            deadline = time.monotonic() + 30
            while True:
                states = [j.state for j in c.list_all()]
                if states.count("completed") == 8 and states.count("failed") == 2:
                    break
                self.assertLess(time.monotonic(), deadline, f"jobs are {states}")
                time.sleep(0.05)
        worker.send_signal(signal.SIGTERM)
        out, _ = worker.communicate(timeout=30)
        self.assertEqual(worker.returncode, 0, out)
        self.assertEqual(out.count("failed charge"), 2, out)


if __name__ == "__main__":
    unittest.main()
