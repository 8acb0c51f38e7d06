"""The client against a real braid server and two workers, started as processes on loopback.

No worker runs the "sharpen" operation, so a sharpen job stays queued until
it is cancelled: the tests that need a job that does not finish use one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import tempfile
import time
import unittest
from pathlib import Path
from typing import Any, Dict, List, Optional
from unittest import mock

import braid
from braid import models

from cluster import Cluster
from pngs import make_png, png_header

MAX_OBJECT = 1 << 20
IDLE_OP = "sharpen"  # no worker of the test cluster runs it
JOB_TIMEOUT = 20.0

CLUSTER: Optional[Cluster] = None


def setUpModule() -> None:
    global CLUSTER
    c = Cluster(
        workers=[
            ["--name", "py-w1", "--threads", "2", "--ops", "blur,boxblur,grayscale,noop,resize,sobel"],
            ["--name", "py-w2", "--threads", "1", "--transport", "tcp", "--ops", "blur,grayscale,noop"],
        ],
        server_args=["--max-object", str(MAX_OBJECT)],
    )
    unittest.addModuleCleanup(c.stop)
    c.start()
    CLUSTER = c


class ClusterTest(unittest.TestCase):
    client: braid.Client

    def setUp(self) -> None:
        assert CLUSTER is not None
        self.cluster = CLUSTER
        self.client = braid.Client(CLUSTER.url, token=CLUSTER.token or "", timeout=10, retry_for=2)
        tmp = tempfile.TemporaryDirectory(prefix="braid-pytest-out-")
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)

    def idle_job(self) -> braid.Job:
        """A job that stays queued (no worker runs its op); cancelled at the test's end if still queued."""
        obj = self.client.put(make_png(8, 8, seed=99))
        job = self.client.submit(IDLE_OP, obj)

        def cancel() -> None:
            try:
                self.client.cancel(job)
            except (braid.ConflictError, braid.NotFoundError):
                pass  # finished, or deleted by the test

        self.addCleanup(cancel)
        return job


class TestServer(ClusterTest):
    def test_health(self) -> None:
        h = self.client.health()
        self.assertEqual(h.status, "ok")
        self.assertTrue(h.version)

    def test_operations(self) -> None:
        ops = {o.name: o for o in self.client.operations()}
        for name in ("blur", "noop", "grayscale", "resize", IDLE_OP):
            self.assertIn(name, ops)
        sigma = {p.name: p for p in ops["blur"].params}["sigma"]
        self.assertEqual((sigma.type, sigma.default), ("float", "2"))
        self.assertTrue(ops["blur"].tileable)
        for op in ops.values():
            if op.kind == "builtin":
                self.assertIn("format", [p.name for p in op.params], op.name)

    def test_workers(self) -> None:
        ws = self.client.workers()
        self.assertEqual([w.info.name for w in ws], ["py-w1", "py-w2"])
        for w in ws:
            self.assertEqual(w.state, "up")
            self.assertGreaterEqual(len(w.info.endpoints), 1)
            self.assertEqual(w.streams, w.info.max_threads)
            self.assertIsNotNone(w.registered_at.tzinfo)
        self.assertEqual(ws[1].transport, "tcp")
        self.assertNotIn(IDLE_OP, ws[0].info.ops)

    def test_models_match_openapi(self) -> None:
        """Every dataclass has the properties of its schema in the server's document, the required ones without defaults."""
        doc = self.client.openapi()
        schemas = doc["components"]["schemas"]
        for name in models.__all__:
            cls = getattr(models, name)
            if not dataclasses.is_dataclass(cls):
                continue
            with self.subTest(schema=name):
                self.assertIn(name, schemas)
                props = set(schemas[name]["properties"])
                fields = {f.name: f for f in dataclasses.fields(cls)}
                self.assertEqual(set(fields), props)
                required = set(schemas[name].get("required", []))
                no_default = {f.name for f in fields.values()
                              if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
                self.assertEqual(no_default, required)
        # The error codes the server documents are the ones BraidError carries.
        codes = schemas["Error"]["properties"]["code"]["enum"]
        self.assertIn("object_not_found", codes)
        self.assertIn("unknown_operation", codes)

    def test_paths_in_openapi(self) -> None:
        """The endpoints the client calls are in the document, with the methods it uses."""
        paths = self.client.openapi()["paths"]
        used = {
            "/healthz": ["get"],
            "/v1/openapi.json": ["get"],
            "/v1/objects": ["get", "post"],
            "/v1/objects/{id}": ["get", "delete"],
            "/v1/operations": ["get"],
            "/v1/jobs": ["get", "post"],
            "/v1/jobs/{id}": ["get", "delete"],
            "/v1/jobs/{id}/wait": ["get"],
            "/v1/jobs/{id}/events": ["get"],
            "/v1/jobs/{id}/cancel": ["post"],
            "/v1/workers": ["get"],
        }
        for path, methods in used.items():
            for m in methods:
                self.assertIn(m, paths.get(path, {}), f"{m.upper()} {path}")


# EMPTY_MODULE is the smallest WASI command: _start does nothing, so a unit's
# output is empty.
EMPTY_MODULE = (b"\x00asm\x01\x00\x00\x00\x01\x04\x01`\x00\x00\x03\x02\x01\x00\x05\x03\x01\x00\x01"
                b"\x07\x13\x02\x06_start\x00\x00\x06memory\x02\x00\n\x04\x01\x02\x00\x0b")


class TestUserOperations(ClusterTest):
    def test_add_run_remove(self) -> None:
        module = self.client.put(EMPTY_MODULE)
        spec = braid.OperationSpec(name="py-empty", module=module.id, summary="does nothing",
                                   params=[braid.Parameter(name="n", type="int", doc="", default="1", min=0, max=9)],
                                   limits=braid.OpLimits(timeout_ms=5000))
        op = self.client.add_operation(spec)
        self.assertEqual((op.kind, op.version, op.digest, op.abi), ("wasm", 1, module.id, "command"))
        self.assertEqual(self.client.add_operation(spec).version, 1)
        listed = {o.name: o for o in self.client.operations()}
        self.assertEqual(listed["py-empty"].params[0].max, 9)
        self.assertEqual(listed["py-empty"].limits, braid.OpLimits(timeout_ms=5000))
        obj = self.client.put(b"some input")
        with self.assertRaises(braid.BadRequestError) as cm:
            self.client.submit("py-empty", obj, params={"n": 10})
        self.assertIn("above its maximum 9", cm.exception.message)
        job = self.client.wait(self.client.submit("py-empty", obj, params={"n": 3}), timeout=60)
        self.assertEqual(job.state, "done", job.error)
        self.assertEqual((job.spec.op_version, job.spec.op_digest), (1, module.id))
        self.assertEqual(self.client.get(job.result or ""), b"")
        self.client.remove_operation("py-empty")
        self.assertNotIn("py-empty", [o.name for o in self.client.operations()])

    def test_params_in_braids_form(self) -> None:
        """Python bools and numbers go as braid takes them: True as "true", not "True"."""
        module = self.client.put(EMPTY_MODULE)
        spec = braid.OperationSpec(name="py-flags", module=module.id,
                                   params=[braid.Parameter(name="lower", type="bool", doc="", default="false"),
                                           braid.Parameter(name="n", type="int", doc="", default="1"),
                                           braid.Parameter(name="x", type="float", doc="", default="1")])
        self.client.add_operation(spec)
        self.addCleanup(self.client.remove_operation, "py-flags")
        obj = self.client.put(b"flags")
        job = self.client.submit("py-flags", obj, params={"lower": True, "n": 3, "x": 0.25})
        self.assertEqual(job.spec.params, {"lower": "true", "n": "3", "x": "0.25"})
        self.assertEqual(self.client.wait(job, timeout=60).state, "done")
        spec_json = braid.JobSpec(op="py-flags", input=obj.id, params={"lower": False}, tiles=(2, 3)).to_json()  # type: ignore[dict-item, arg-type]
        self.assertEqual((spec_json["params"], spec_json["tiles"]), ({"lower": "false"}, "2x3"))
        with self.assertRaisesRegex(TypeError, "parameter lower: want a string, a number or a bool"):
            self.client.submit("py-flags", obj, params={"lower": [True]})

    def test_many_inputs(self) -> None:
        objs = [self.client.put(f"object {i}".encode()) for i in range(3)]
        job = self.client.wait(self.client.submit("noop", objs), timeout=60)
        self.assertEqual(job.state, "done", job.error)
        self.assertTrue(job.has_manifest)
        m = self.client.manifest(job.result or "")
        self.assertEqual([u.input for u in m.units], [o.id for o in objs])
        self.assertEqual(self.client.result_ids(job), [o.id for o in objs])  # noop returns its input

    def test_bad_module(self) -> None:
        text = self.client.put(b"print('hello')\n")
        with self.assertRaises(braid.BraidError) as cm:
            self.client.add_operation(braid.OperationSpec(name="py-text", module=text.id))
        self.assertEqual(cm.exception.code, "bad_module")
        self.assertIn("not a WebAssembly module", cm.exception.message)


class TestObjects(ClusterTest):
    def test_put_get_list_delete(self) -> None:
        data = make_png(16, 12, seed=1)
        obj = self.client.put(data)
        self.assertEqual(obj.id, hashlib.sha256(data).hexdigest())
        self.assertEqual(obj.size, len(data))
        self.assertFalse(obj.existing)
        again = self.client.put(bytearray(data))
        self.assertTrue(again.existing)
        self.assertEqual(again.id, obj.id)

        self.assertEqual(self.client.get(obj), data)
        self.assertEqual(self.client.get(obj.id), data)
        buf = io.BytesIO()
        self.assertEqual(self.client.write_to(obj, buf), len(data))
        self.assertEqual(buf.getvalue(), data)
        self.assertIn(obj.id, [o.id for o in self.client.objects()])

        path = self.client.download(obj, self.tmp)
        self.assertEqual(path, self.tmp / (obj.id + ".png"))
        self.assertEqual(path.read_bytes(), data)
        named = self.client.download(obj, self.tmp / "named.png")
        self.assertEqual(named.read_bytes(), data)
        self.assertEqual([p.name for p in self.tmp.iterdir() if p.name.startswith(".")], [])

        self.client.delete_object(obj)
        with self.assertRaises(braid.NotFoundError) as cm:
            self.client.get(obj)
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "object_not_found"))
        self.assertIn(obj.id, cm.exception.message)
        with self.assertRaises(braid.NotFoundError):
            self.client.delete_object(obj)
        self.assertNotIn(obj.id, [o.id for o in self.client.objects()])

    def test_paged_lists(self) -> None:
        objs = [self.client.put(f"paged {i}".encode()) for i in range(5)]
        whole = [o.id for o in self.client.objects()]
        self.assertEqual(whole, sorted(whole))
        self.assertTrue({o.id for o in objs} <= set(whole))
        self.assertEqual([o.id for o in self.client.objects(page_size=2)], whole)
        self.assertEqual([w.info.name for w in self.client.workers(page_size=1)], [w.info.name for w in self.client.workers()])
        self.assertEqual(len(self.client.workers(page_size=1)), 2)
        for _ in range(3):
            self.client.submit("noop", objs[0])
        self.assertEqual([j.id for j in self.client.jobs(page_size=2)], [j.id for j in self.client.jobs()])

    def test_put_file_from_offset(self) -> None:
        src = self.tmp / "in.bin"
        src.write_bytes(b"head:" + b"x" * 1000)
        obj = self.client.put_file(src)
        self.assertEqual(self.client.get(obj), src.read_bytes())
        with open(src, "rb") as f:
            f.seek(5)
            tail = self.client.put(f)
        self.assertEqual(self.client.get(tail), b"x" * 1000)

    def test_download_failure_leaves_no_file(self) -> None:
        with self.assertRaises(braid.NotFoundError):
            self.client.download("0" * 64, self.tmp / "missing.png")
        self.assertEqual(list(self.tmp.iterdir()), [])

    def test_too_large(self) -> None:
        with self.assertRaises(braid.TooLargeError) as cm:
            self.client.put(b"\0" * (MAX_OBJECT + 1))
        self.assertEqual((cm.exception.status, cm.exception.code), (413, "too_large"))

    def test_bad_object_id(self) -> None:
        with self.assertRaises(braid.BadRequestError) as cm:
            self.client.get("not-an-id")
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "bad_request"))


class TestJobs(ClusterTest):
    def test_noop_returns_the_input(self) -> None:
        data = make_png(20, 10, seed=2)
        job = self.client.submit("noop", self.client.put(data))
        self.assertIn(job.state, ("queued", "running", "done"))
        self.assertEqual(job.spec.op, "noop")
        self.assertEqual(job.spec.policy, "dynamic")  # filled in by the server
        done = self.client.wait(job, timeout=JOB_TIMEOUT)
        self.assertEqual(done.state, "done", done.error)
        self.assertTrue(done.terminal)
        self.assertEqual(self.client.get(done.result or ""), data)
        self.assertEqual(len(done.units), 1)
        self.assertEqual(done.units[0].state, "done")
        self.assertIn(done.units[0].worker, ("py-w1", "py-w2"))
        self.assertEqual(sum(done.units_per_worker.values()), 1)

    def test_tiled_blur_with_progress(self) -> None:
        src = self.tmp / "in.png"
        src.write_bytes(make_png(64, 48, seed=3))
        job = self.client.submit("blur", self.client.put_file(src), params={"sigma": 1.5}, tiles="2x3")
        self.assertEqual(job.spec.params, {"sigma": "1.5"})
        self.assertEqual(job.spec.tiles, "2x3")
        seen: List[braid.Job] = []
        done = self.client.wait(job, progress=seen.append, timeout=JOB_TIMEOUT)
        self.assertEqual(done.state, "done", done.error)
        self.assertGreaterEqual(len(seen), 1)
        self.assertTrue(all(j.id == job.id for j in seen))
        self.assertTrue(seen[-1].terminal)
        self.assertEqual(seen[-1].progress.done, 6)
        self.assertEqual(done.progress.total, 6)
        self.assertEqual(sorted(u.index for u in done.units), list(range(6)))
        paths = self.client.download_results(done, self.tmp / "out")
        self.assertEqual(len(paths), 1)
        out = paths[0].read_bytes()
        self.assertEqual(png_header(out)[:2], (64, 48))
        self.assertNotEqual(out, src.read_bytes())

    def test_resize(self) -> None:
        job = self.client.submit("resize", self.client.put(make_png(40, 20, seed=4)), params={"width": 10})
        done = self.client.wait(job.id, timeout=JOB_TIMEOUT)
        self.assertEqual(done.state, "done", done.error)
        self.assertEqual(png_header(self.client.get(done.result or ""))[:2], (10, 5))

    def test_repeat_manifest(self) -> None:
        data = make_png(12, 12, seed=5)
        obj = self.client.put(data)
        spec = braid.JobSpec(op="grayscale", input=obj.id, repeat=3, policy="equal")
        done = self.client.wait(self.client.submit_spec(spec), timeout=JOB_TIMEOUT)
        self.assertEqual(done.state, "done", done.error)
        self.assertTrue(done.has_manifest)
        m = self.client.manifest(done.result or "")
        self.assertEqual((m.job, m.op, m.input), (done.id, "grayscale", obj.id))
        # The three units have the same output: one entry stands for them.
        self.assertEqual([(u.index, u.units) for u in m.units], [(0, 3)])
        self.assertEqual([u.index for u in m.expand()], [0, 1, 2])
        ids = self.client.result_ids(done)
        self.assertEqual(ids, [m.units[0].output] * 3)
        paths = self.client.download_results(done.id, self.tmp)
        self.assertEqual(len(paths), 3)
        for p in paths:
            self.assertEqual(png_header(p.read_bytes()), (12, 12, 0))  # 8-bit gray

    def test_events(self) -> None:
        job = self.client.submit("blur", self.client.put(make_png(32, 32, seed=6)), repeat=4)
        events = list(self.client.events(job, timeout=JOB_TIMEOUT))
        self.assertGreaterEqual(len(events), 1)
        self.assertEqual(events[-1].type, "done")
        self.assertTrue(all(e.type == "progress" for e in events[:-1]))
        self.assertEqual(events[-1].job.state, "done")
        self.assertEqual(events[-1].job.progress.done, 4)
        self.assertTrue(all(e.job.id == job.id for e in events))
        # A finished job's stream is its one done event.
        self.assertEqual([e.type for e in self.client.events(job, timeout=JOB_TIMEOUT)], ["done"])

    def test_events_close_early(self) -> None:
        job = self.idle_job()
        it = self.client.events(job, timeout=JOB_TIMEOUT)
        first = next(iter(it))
        self.assertEqual((first.type, first.job.state), ("progress", "queued"))
        self.assertIn(IDLE_OP, first.job.waiting or "")
        it.close()  # type: ignore[attr-defined]

    def test_cancel_and_delete(self) -> None:
        job = self.idle_job()
        self.assertEqual(self.client.job(job).state, "queued")
        with self.assertRaises(braid.ConflictError) as cm:
            self.client.delete_job(job)
        self.assertEqual(cm.exception.code, "conflict")
        cancelled = self.client.cancel(job)
        self.assertEqual(cancelled.state, "cancelled")
        with self.assertRaises(braid.ConflictError) as cm:
            self.client.cancel(job)
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "conflict"))
        final = self.client.wait(job, progress=lambda j: None, timeout=JOB_TIMEOUT)
        self.assertEqual(final.state, "cancelled")
        self.assertEqual(final.progress.cancelled, 1)
        with self.assertRaises(braid.JobFailedError) as jf:
            self.client.result_ids(final)
        self.assertEqual(jf.exception.code, "cancelled")
        self.assertIn(job.id, [j.id for j in self.client.jobs()])
        self.client.delete_job(job)
        with self.assertRaises(braid.NotFoundError) as nf:
            self.client.job(job)
        self.assertEqual((nf.exception.status, nf.exception.code), (404, "not_found"))
        self.assertNotIn(job.id, [j.id for j in self.client.jobs()])

    def test_wait_timeout(self) -> None:
        job = self.idle_job()
        for progress in (None, lambda j: None):
            t0 = time.monotonic()
            with self.assertRaises(braid.BraidTimeoutError):
                self.client.wait(job, progress=progress, timeout=0.5)
            self.assertLess(time.monotonic() - t0, 5)
        with self.assertRaises(TimeoutError):  # BraidTimeoutError is one
            list(self.client.events(job, timeout=0.3))

    def test_bad_requests(self) -> None:
        obj = self.client.put(make_png(8, 8, seed=7))
        cases: List[Dict[str, Any]] = [
            dict(op="no-such-op", want="unknown_operation"),
            dict(op="blur", params={"sigma": "-1"}, want="bad_parameter"),
            dict(op="blur", repeat=2, tiles="2x2", want="bad_request"),
            dict(op="blur", tiles="0x9", want="bad_parameter"),
            dict(op="blur", policy="fastest", want="bad_parameter"),
        ]
        for case in cases:
            want = case.pop("want")
            with self.subTest(**case), self.assertRaises(braid.BadRequestError) as cm:
                self.client.submit(case.pop("op"), obj, **case)
            self.assertEqual((cm.exception.status, cm.exception.code), (400, want))
            self.assertTrue(cm.exception.message)
            self.assertFalse(cm.exception.message.startswith(want + ":"))
        text = self.client.put(b"not an image")
        with self.assertRaises(braid.BadRequestError) as cm:
            self.client.submit("blur", text)
        self.assertEqual(cm.exception.code, "bad_image")
        with self.assertRaises(braid.NotFoundError) as cm2:
            self.client.submit("blur", "f" * 64)
        self.assertEqual((cm2.exception.status, cm2.exception.code), (404, "object_not_found"))
        with self.assertRaises(braid.BadRequestError) as cm:
            self.client.submit("blur", "not-an-id")
        self.assertEqual(cm.exception.code, "bad_request")

    def test_unknown_job(self) -> None:
        for call in (self.client.job, self.client.cancel, self.client.delete_job, self.client.wait):
            with self.subTest(call=call.__name__), self.assertRaises(braid.NotFoundError) as cm:
                call("j-000000000000")  # type: ignore[operator]
            self.assertEqual(cm.exception.code, "not_found")
        with self.assertRaises(braid.NotFoundError):
            list(self.client.events("j-000000000000", timeout=5))

    def test_job_json_round_trip(self) -> None:
        """A JobSpec from the server's answer submits the same job again."""
        obj = self.client.put(make_png(8, 8, seed=8))
        job = self.client.submit("boxblur", obj, params={"radius": 1}, speculate=False)
        again = self.client.submit_spec(job.spec)
        self.assertEqual(again.spec, job.spec)
        self.assertEqual(json.loads(json.dumps(job.spec.to_json()))["params"], {"radius": "1"})
        for j in (job, again):
            self.assertEqual(self.client.wait(j, timeout=JOB_TIMEOUT).state, "done")


class TestFirstHour(ClusterTest):
    """The spellings a new user tries first work, and mistakes say what to do."""

    def test_worker_name_and_tiles_pair(self) -> None:
        self.assertEqual([w.name for w in self.client.workers()], ["py-w1", "py-w2"])
        obj = self.client.put(make_png(32, 24, seed=5))
        job = self.client.wait(self.client.submit("blur", obj, tiles=(2, 2)), timeout=JOB_TIMEOUT)
        self.assertEqual((job.state, job.spec.tiles, job.progress.total), ("done", "2x2", 4), job.error)

    def test_download_of_a_job_without_result(self) -> None:
        """Downloading a failed or cancelled job's result raises BraidError saying so, with the job's error, never a TypeError."""
        text = self.client.put(b"not an image " + os.urandom(8))
        failed = self.client.wait(self.client.submit("blur", [text]), timeout=JOB_TIMEOUT)
        self.assertEqual(failed.state, "failed")
        self.assertTrue(failed.error)
        with self.assertRaises(braid.JobFailedError) as cm:
            self.client.download(failed, self.tmp / "out.png")
        self.assertEqual(cm.exception.code, "failed")
        self.assertIn(f"job {failed.id} is failed: {failed.error}", str(cm.exception))
        with self.assertRaises(braid.BraidError) as cm2:
            self.client.download(failed.result, self.tmp / "out.png")  # type: ignore[arg-type]
        self.assertIn("has no result", str(cm2.exception))
        cancelled = self.client.cancel(self.idle_job())
        with self.assertRaises(braid.JobFailedError) as cm:
            self.client.get(cancelled)
        self.assertEqual(cm.exception.code, "cancelled")
        self.assertEqual(list(self.tmp.iterdir()), [])
        done = self.client.wait(self.client.submit("noop", self.client.put(b"x")), timeout=JOB_TIMEOUT)
        self.assertEqual(self.client.download(done, self.tmp / "x").read_bytes(), b"x")

    def test_wrong_urls(self) -> None:
        """https:// to the plain HTTP server, or a page of the dashboard, is told with the server's base URL."""
        base = self.cluster.url
        for url, reason in ((base.replace("http://", "https://"), "it is an HTTP server"),
                            (base + "/ui", "the API is not under /ui"),
                            (base + "/ui/jobs", "the API is not under /ui/jobs")):
            with self.subTest(url=url), self.assertRaises(braid.WrongURLError) as cm:
                braid.Client(url, token=self.cluster.token or "", retry_for=10).jobs()
            self.assertEqual(cm.exception.base, base)
            self.assertEqual(str(cm.exception), f"{url} is not the server's base URL: {reason}; give the server's base URL, such as {base}")
        with self.assertRaises(braid.NotFoundError):  # a job that is not there is that, at the base URL
            self.client.job("j-000000000000")


class TestReadme(ClusterTest):
    def test_blur_a_folder(self) -> None:
        """The README's example runs as written and blurs every PNG of photos/ into blurred/."""
        readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
        _, found, rest = readme.partition("<!-- example: blur a folder -->\n```python\n")
        self.assertTrue(found, "README.md has no marked example")
        code = rest.split("```", 1)[0]
        self.assertLessEqual(len([line for line in code.splitlines() if line.strip()]), 10)
        photos = self.tmp / "photos"
        photos.mkdir()
        sizes = {"a.png": (30, 20), "b.png": (17, 41), "c.png": (64, 64)}
        for name, (w, h) in sizes.items():
            (photos / name).write_bytes(make_png(w, h, seed=w))
        env = {"BRAID_SERVER": self.cluster.url, "BRAID_TOKEN": self.cluster.token or ""}
        cwd = os.getcwd()
        out = io.StringIO()
        try:
            os.chdir(self.tmp)
            with mock.patch.dict(os.environ, env), contextlib.redirect_stdout(out):
                exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
        finally:
            os.chdir(cwd)
        for name, size in sizes.items():
            got = (self.tmp / "blurred" / name).read_bytes()
            self.assertEqual(png_header(got)[:2], size, name)
            self.assertNotEqual(got, (photos / name).read_bytes(), name)
            self.assertIn(f"{name}: 1/1", out.getvalue())


if __name__ == "__main__":
    unittest.main()


class TestTokens(ClusterTest):
    """Roles against the real server, which checks tokens by default."""

    def test_roles(self) -> None:
        self.assertTrue(self.cluster.token, "the server wrote no admin token: does it check tokens?")
        anon = braid.Client(self.cluster.url, token="", timeout=10, retry_for=2)
        with self.assertRaises(braid.UnauthorizedError) as cm:
            anon.jobs()
        self.assertEqual((cm.exception.status, cm.exception.code), (401, "unauthorized"))

        made = self.client.create_token("submit", name="py-alice", expires_in="1d")
        self.assertTrue(made.token and made.token.startswith("braid_" + made.id + "_"))
        self.assertIsNotNone(made.expires_at)
        alice = braid.Client(self.cluster.url, token=made.token, timeout=10, retry_for=2)
        reader_tok = self.client.create_token("read").token
        assert reader_tok is not None
        reader = braid.Client(self.cluster.url, token=reader_tok, timeout=10, retry_for=2)

        obj = alice.put(make_png(8, 8, seed=int.from_bytes(os.urandom(4), "big")))  # bytes nobody uploaded yet
        self.assertEqual(obj.owner, made.id)
        job = alice.submit(IDLE_OP, obj)
        self.assertEqual(job.owner, made.id)
        self.addCleanup(lambda: self.client.cancel(job))
        self.assertEqual([j.id for j in reader.jobs() if j.id == job.id], [job.id])
        with self.assertRaises(braid.ForbiddenError):
            reader.cancel(job)
        with self.assertRaises(braid.ForbiddenError):
            alice.tokens()
        listed = {t.id: t for t in self.client.tokens()}
        self.assertEqual(listed[made.id].name, "py-alice")
        self.assertIsNone(listed[made.id].token)

        self.client.revoke_token(made)
        with self.assertRaises(braid.UnauthorizedError):
            alice.jobs()
        with self.assertRaises(braid.BadRequestError):
            self.client.create_token("root")
