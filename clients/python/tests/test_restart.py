"""wait and events ride through a restart of the real server.

A cluster of its own, with no worker: its job stays queued across the
restart (the server keeps it in its data directory) until the test cancels
it from another thread.
"""

from __future__ import annotations

import threading
import time
import unittest
from typing import List, Optional

import braid

from cluster import Cluster
from pngs import make_png

TIMEOUT = 30.0


class TestRestart(unittest.TestCase):
    def setUp(self) -> None:
        self.cluster = Cluster(workers=[])
        self.addCleanup(self.cluster.stop)
        self.cluster.start()
        self.client = braid.Client(self.cluster.url, token=self.cluster.token or "", timeout=10, retry_for=15)

    def test_wait_rides_through_a_restart(self) -> None:
        job = self.client.submit("blur", self.client.put(make_png(8, 8)))
        seen: List[braid.Job] = []
        result: List[braid.Job] = []
        failure: List[BaseException] = []
        first = threading.Event()

        def progress(j: braid.Job) -> None:
            seen.append(j)
            first.set()

        def wait() -> None:
            try:
                result.append(self.client.wait(job, progress=progress, timeout=TIMEOUT))
            except BaseException as e:  # handed to the test's thread
                failure.append(e)

        t = threading.Thread(target=wait, daemon=True)
        t.start()
        self.assertTrue(first.wait(TIMEOUT), "no progress event")
        self.cluster.stop_server()
        time.sleep(0.3)  # the waiter finds no server for a moment
        self.cluster.start_server()
        self.assertEqual(self.client.job(job).state, "queued")  # kept across the restart
        self.client.cancel(job)
        t.join(TIMEOUT)
        self.assertFalse(t.is_alive(), "wait did not return")
        err: Optional[BaseException] = failure[0] if failure else None
        self.assertIsNone(err, err)
        self.assertEqual(result[0].state, "cancelled")
        self.assertGreaterEqual(len(seen), 2)  # the first stream's event, and the reconnected one's
        self.assertEqual(seen[-1].state, "cancelled")


if __name__ == "__main__":
    unittest.main()
