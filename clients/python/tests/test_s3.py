"""put_from against a real S3 server: versitygw over a temporary directory, as the Go tests run it.

The binary is $BRAID_VERSITYGW or ~/.cache/braid/bin/versitygw-v1.8.0 (make versitygw builds it);
without one these tests skip, saying so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.request
from pathlib import Path

import braid

from cluster import Cluster, free_port

ACCESS, SECRET = "braidpyaccess", "braidpysecret0123456789"


def versitygw() -> str:
    b = os.environ.get("BRAID_VERSITYGW") or str(Path.home() / ".cache/braid/bin/versitygw-v1.8.0")
    return b if os.access(b, os.X_OK) else ""


@unittest.skipUnless(versitygw(), "SKIPPING S3 TESTS: no versitygw binary (make versitygw)")
class TestPutFrom(unittest.TestCase):
    def setUp(self) -> None:
        tmp = Path(tempfile.mkdtemp(prefix="braid-py-s3-"))
        self.addCleanup(shutil.rmtree, tmp, True)
        (tmp / "gw" / "bkt").mkdir(parents=True)
        (tmp / "meta").mkdir()
        port = free_port()
        gw = subprocess.Popen([versitygw(), "--access", ACCESS, "--secret", SECRET, "--port", f"127.0.0.1:{port}",
                               "--quiet", "--health", "/health", "posix", "--sidecar", str(tmp / "meta"), str(tmp / "gw")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(gw.wait)
        self.addCleanup(gw.kill)
        endpoint = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(endpoint + "/health", timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": ACCESS, "AWS_SECRET_ACCESS_KEY": SECRET,
               "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)

        def restore() -> None:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.addCleanup(restore)
        self.cluster = Cluster(workers=[], server_args=["--store", "s3://bkt/objs"])
        self.addCleanup(self.cluster.stop)
        self.cluster.start()
        self.client = braid.Client(self.cluster.url, token=self.cluster.token or "", timeout=30, retry_for=5)
        self.root = tmp / "gw" / "bkt"

    def test_put_from_a_bucket_object(self) -> None:
        data = b"an object already in the bucket"
        first = self.client.put(data)
        self.assertEqual(self.root.joinpath("objs", "objects", first.id).read_bytes(), data)
        again = self.client.put_from(f"s3://bkt/objs/objects/{first.id}")
        self.assertEqual(again.id, first.id)
        self.assertEqual(self.client.get(again.id), data)

    def test_put_from_a_missing_key(self) -> None:
        with self.assertRaises(braid.NotFoundError) as cm:
            self.client.put_from("s3://bkt/no/such/key")
        self.assertEqual(cm.exception.code, "object_not_found")
        with self.assertRaises(ValueError):
            self.client.put_from("/not/a/url")


if __name__ == "__main__":
    unittest.main()
