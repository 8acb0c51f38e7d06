"""The client's HTTP behaviour that a healthy braid server does not show: headers, retries, foreign answers, TLS.

These tests answer over real loopback sockets from a small stdlib HTTP
server whose answers each test scripts (a 503 while stopping, a proxy's
HTML page, a connection cut mid-answer); test_cluster.py runs the client
against the real braid server.
"""

from __future__ import annotations

import http.server
import io
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import unittest
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple
from unittest import mock

import braid
from braid._sse import read_events
from braid.models import parse_time

from cluster import free_port

JOB = {
    "id": "j-0123456789ab",
    "spec": {"op": "noop", "input": "a" * 64, "policy": "dynamic"},
    "state": "done",
    "progress": {"total": 1, "done": 1, "running": 0, "sent": 0, "failed": 0, "pending": 0, "cancelled": 0},
    "result": "b" * 64,
    "received_at": "2026-01-02T03:04:05.123456789Z",
}

Handler = Callable[["Scripted"], None]


class Scripted(http.server.BaseHTTPRequestHandler):
    """Answers each request with the next function of the server's script, and records the request."""

    protocol_version = "HTTP/1.1"
    server: "ScriptServer"

    def handle_one(self) -> None:
        body = b""
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            body = self.rfile.read(n)
        self.server.seen.append((self.command, self.path, dict(self.headers), body))
        script = self.server.script
        (script.pop(0) if len(script) > 1 else script[0])(self)

    do_GET = do_POST = do_DELETE = handle_one

    def send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class ScriptServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: List[Handler], port: int = 0, tls: Optional[ssl.SSLContext] = None) -> None:
        super().__init__(("127.0.0.1", port), Scripted)
        self.script = script
        self.seen: List[Tuple[str, str, Dict[str, str], bytes]] = []
        if tls is not None:
            self.socket = tls.wrap_socket(self.socket, server_side=True)
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        self.thread.join(timeout=5)


def answer(status: int, doc: object) -> Handler:
    return lambda h: h.send(status, json.dumps(doc).encode())


def error(status: int, code: str, message: str) -> Handler:
    return answer(status, {"error": {"code": code, "message": message}})


def cut(h: Scripted) -> None:
    """Sends half an answer and closes the connection."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", "1000")
    h.end_headers()
    h.wfile.write(b"[")
    h.wfile.flush()
    h.close_connection = True
    h.connection.shutdown(socket.SHUT_RDWR)


class ScriptTest(unittest.TestCase):
    def serve(self, *script: Handler, port: int = 0, tls: Optional[ssl.SSLContext] = None) -> ScriptServer:
        s = ScriptServer(list(script), port, tls)
        self.addCleanup(s.close)
        return s


class TestAuthAndConfig(ScriptTest):
    def test_token_argument(self) -> None:
        s = self.serve(answer(200, []))
        braid.Client(s.url, token="t0ken").jobs()
        self.assertEqual(s.seen[-1][2].get("Authorization"), "Bearer t0ken")
        self.assertTrue(s.seen[-1][2].get("User-Agent", "").startswith("braid-python/"))

    def test_token_from_environment(self) -> None:
        s = self.serve(answer(200, []))
        with mock.patch.dict(os.environ, {"BRAID_TOKEN": "from-env"}):
            braid.Client(s.url).workers()
            self.assertEqual(s.seen[-1][2].get("Authorization"), "Bearer from-env")
            braid.Client(s.url, token="").workers()  # "" sends none, whatever the environment says
            self.assertNotIn("Authorization", s.seen[-1][2])
        with mock.patch.dict(os.environ, {"BRAID_TOKEN": ""}):
            braid.Client(s.url).workers()
            self.assertNotIn("Authorization", s.seen[-1][2])

    def test_server_from_environment(self) -> None:
        s = self.serve(answer(200, []))
        with mock.patch.dict(os.environ, {"BRAID_SERVER": s.url.replace("http://", "")}):
            c = braid.Client()
            self.assertEqual(c.url, s.url)
            c.objects()
        self.assertEqual(s.seen[-1][:2], ("GET", "/v1/objects"))
        with mock.patch.dict(os.environ, {"BRAID_SERVER": ""}):
            self.assertEqual(braid.Client().url, braid.DEFAULT_SERVER)

    def test_config_file(self) -> None:
        s = self.serve(answer(200, []), answer(200, []))
        with tempfile.TemporaryDirectory() as d:
            cfg = Path(d) / "braid" / "config"
            cfg.parent.mkdir()
            cfg.write_text(f"# the CLI's file\nserver = {s.url}\ntoken = from-file\n")
            clean = {"BRAID_SERVER": "", "BRAID_TOKEN": "", "BRAID_CA": "", "BRAID_CONFIG": "", "XDG_CONFIG_HOME": d}
            with mock.patch.dict(os.environ, clean):
                c = braid.Client()
                self.assertEqual(c.url, s.url)
                c.jobs()
                self.assertEqual(s.seen[-1][2].get("Authorization"), "Bearer from-file")
                with mock.patch.dict(os.environ, {"BRAID_TOKEN": "from-env"}):
                    braid.Client().jobs()  # the environment wins over the file
                    self.assertEqual(s.seen[-1][2].get("Authorization"), "Bearer from-env")
                cfg.write_text("server http://x\n")
                with self.assertRaisesRegex(ValueError, "line 1: want key = value"):
                    braid.Client()
                cfg.write_text("\nproxy = http://p:3128\n")
                with self.assertRaisesRegex(ValueError, "line 2: unknown key 'proxy'"):
                    braid.Client()
            with mock.patch.dict(os.environ, dict(clean, BRAID_CONFIG=str(Path(d) / "none"))):
                with self.assertRaises(FileNotFoundError):
                    braid.Client()

    def test_unauthorized(self) -> None:
        s = self.serve(error(401, "unauthorized", "unauthorized: no token"))
        with self.assertRaises(braid.UnauthorizedError) as cm:
            braid.Client(s.url, token="bad").jobs()
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.message), (401, "unauthorized", "no token"))

    def test_bad_url(self) -> None:
        with self.assertRaises(ValueError):
            braid.Client("ftp://example.com")


class TestErrors(ScriptTest):
    def test_not_braid(self) -> None:
        s = self.serve(lambda h: h.send(404, b"<html>nope</html>", "text/html"))
        with self.assertRaises(braid.NotBraidError) as cm:
            braid.Client(s.url).jobs()
        self.assertEqual(cm.exception.status, 404)
        self.assertIn("is it a braid server", str(cm.exception))
        self.assertNotIn("html", str(cm.exception))

    def test_not_json(self) -> None:
        s = self.serve(lambda h: h.send(200, b"hello", "text/plain"))
        with self.assertRaises(braid.NotBraidError):
            braid.Client(s.url).jobs()

    def test_wrong_shape(self) -> None:
        bad = dict(JOB, progress={"total": 1})
        s = self.serve(answer(200, bad))
        with self.assertRaises(braid.NotBraidError) as cm:
            braid.Client(s.url).job("j-0123456789ab")
        self.assertIn("progress", str(cm.exception))

    def test_unknown_fields_ignored(self) -> None:
        s = self.serve(answer(200, dict(JOB, owner="alice", spec=dict(JOB["spec"], future=1))))  # type: ignore[arg-type]
        j = braid.Client(s.url).job("j-0123456789ab")
        self.assertEqual(j.received_at.microsecond, 123456)
        self.assertEqual(j.result, "b" * 64)

    def test_server_error_not_retried(self) -> None:
        s = self.serve(error(500, "internal", "boom"))
        with self.assertRaises(braid.ServerError) as cm:
            braid.Client(s.url, retry_for=5).jobs()
        self.assertEqual((cm.exception.status, cm.exception.code), (500, "internal"))
        self.assertEqual(len(s.seen), 1)


class TestRetry(ScriptTest):
    def test_no_server(self) -> None:
        port = free_port()
        t0 = time.monotonic()
        with self.assertRaises(braid.NoServerError) as cm:
            braid.Client(f"127.0.0.1:{port}", retry_for=0).jobs()
        self.assertLess(time.monotonic() - t0, 1)
        self.assertIn("connection refused", str(cm.exception))
        t0 = time.monotonic()
        with self.assertRaises(braid.NoServerError):
            braid.Client(f"127.0.0.1:{port}", retry_for=0.6).jobs()
        self.assertGreaterEqual(time.monotonic() - t0, 0.5)

    def test_rides_through_a_late_server(self) -> None:
        port = free_port()
        late: List[ScriptServer] = []
        timer = threading.Timer(0.4, lambda: late.append(self.serve(answer(201, JOB), port=port)))
        timer.start()
        self.addCleanup(timer.cancel)
        job = braid.Client(f"127.0.0.1:{port}", retry_for=10).submit("noop", "a" * 64)  # a POST: nothing was sent
        self.assertEqual(job.id, JOB["id"])

    def test_stopping_server(self) -> None:
        s = self.serve(error(503, "unavailable", "server is shutting down"), answer(201, JOB))
        job = braid.Client(s.url, retry_for=10).submit("noop", "a" * 64)
        self.assertEqual(job.state, "done")
        self.assertEqual([m for m, *_ in s.seen], ["POST", "POST"])
        self.assertEqual(json.loads(s.seen[0][3]), {"op": "noop", "input": "a" * 64})

    def test_proxy_503_retries_gets_only(self) -> None:
        s = self.serve(lambda h: h.send(502, b"bad gateway", "text/plain"), answer(200, []))
        self.assertEqual(braid.Client(s.url, retry_for=10).jobs(), [])
        s2 = self.serve(lambda h: h.send(502, b"bad gateway", "text/plain"), answer(201, JOB))
        with self.assertRaises(braid.NotBraidError) as cm:
            braid.Client(s2.url, retry_for=10).submit("noop", "a" * 64)
        self.assertEqual(cm.exception.status, 502)
        self.assertIn("bad gateway", str(cm.exception))

    def test_broken_get_retried(self) -> None:
        s = self.serve(cut, answer(200, []))
        self.assertEqual(braid.Client(s.url, retry_for=10).objects(), [])
        self.assertEqual(len(s.seen), 2)

    def test_broken_download_after_bytes_is_final(self) -> None:
        def half(h: Scripted) -> None:
            h.send_response(200)
            h.send_header("Content-Length", "100")
            h.end_headers()
            h.wfile.write(b"x" * 10)
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)

        s = self.serve(half, lambda h: h.send(200, b"y" * 100, "application/octet-stream"))
        buf = io.BytesIO()
        with self.assertRaises(braid.ConnectionLostError):
            braid.Client(s.url, retry_for=10).write_to("a" * 64, buf)
        self.assertEqual(buf.getvalue(), b"x" * 10)
        self.assertEqual(len(s.seen), 1)
        # get() holds nothing of a broken answer, so it starts over.
        self.assertEqual(braid.Client(s.url, retry_for=10).get("a" * 64), b"y" * 100)

    def test_upload_from_a_pipe_is_not_replayed_after_sending(self) -> None:
        s = self.serve(cut)
        r, w = os.pipe()
        os.write(w, b"data")
        os.close(w)
        with open(r, "rb") as f, self.assertRaises(braid.ConnectionLostError):
            braid.Client(s.url, retry_for=10).put(f)
        self.assertEqual(len(s.seen), 1)


class TestEvents(ScriptTest):
    def test_reconnects_until_done(self) -> None:
        progress = dict(JOB, state="running")
        def stream(*events: Tuple[str, dict], last_blank: bool = True) -> Handler:  # type: ignore[type-arg]
            def h(req: Scripted) -> None:
                req.send_response(200)
                req.send_header("Content-Type", "text/event-stream")
                req.end_headers()
                req.close_connection = True
                for i, (kind, job) in enumerate(events):
                    end = "\n\n" if last_blank or i < len(events) - 1 else "\n"
                    req.wfile.write(f": comment\nevent: {kind}\ndata: {json.dumps({'type': kind, 'job': job})}{end}".encode())
            return h

        s = self.serve(stream(("progress", progress), ("progress", progress), last_blank=False), stream(("progress", progress), ("done", JOB)), answer(200, JOB))
        seen: List[str] = []
        job = braid.Client(s.url, retry_for=5).wait("j-0123456789ab", progress=lambda j: seen.append(j.state), timeout=10)
        self.assertEqual(seen, ["running", "running", "done"])  # the half event of the first stream is dropped
        self.assertEqual(job.state, "done")
        self.assertEqual([p for _, p, *_ in s.seen][:2], ["/v1/jobs/j-0123456789ab/events"] * 2)
        self.assertTrue(s.seen[2][1].startswith("/v1/jobs/j-0123456789ab/wait?timeout="))

    def test_sse_parser(self) -> None:
        text = b": hi\nevent: a\ndata: 1\ndata:2\n\ndata: x\r\n\r\nevent: b\nid: 7\n\nevent: c\ndata: cut"
        got = [(e.event, e.data) for e in read_events(io.BytesIO(text))]
        self.assertEqual(got, [("a", "1\n2"), ("message", "x")])


class TestPackage(unittest.TestCase):
    def test_typed(self) -> None:
        self.assertTrue((Path(braid.__file__).parent / "py.typed").is_file())
        self.assertRegex(braid.__version__, r"^\d+\.\d+\.\d+")
        for name in braid.__all__:
            self.assertTrue(hasattr(braid, name), name)


class TestTimes(unittest.TestCase):
    def test_parse_time(self) -> None:
        t = parse_time("2026-11-25T08:45:31.318433852Z")
        self.assertEqual((t.hour, t.microsecond, t.utcoffset()), (8, 318433, parse_time("2026-01-01T00:00:00Z").utcoffset()))
        self.assertEqual(parse_time("2026-11-25T09:45:31+01:00"), parse_time("2026-11-25T08:45:31Z"))
        with self.assertRaises(ValueError):
            parse_time("yesterday")


@unittest.skipUnless(shutil.which("openssl"), "needs the openssl command to make a certificate")
class TestTLS(ScriptTest):
    def test_ca(self) -> None:
        d = Path(tempfile.mkdtemp(prefix="braid-pytest-tls-"))
        self.addCleanup(shutil.rmtree, d, True)
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
             "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
             "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem")],
            check=True, capture_output=True, timeout=30,
        )
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(d / "cert.pem", d / "key.pem")
        s = self.serve(answer(200, []), tls=ctx)
        url = s.url.replace("http://", "https://")
        self.assertEqual(braid.Client(url, ca=d / "cert.pem", token="t").workers(), [])
        self.assertEqual(s.seen[-1][2].get("Authorization"), "Bearer t")
        with self.assertRaises(braid.BraidError) as cm:
            braid.Client(url, retry_for=0).workers()  # not trusted without the CA
        self.assertIn("TLS", str(cm.exception))
        self.assertNotIsInstance(cm.exception, braid.WrongURLError)

    def test_http_to_https_server(self) -> None:
        """Plain HTTP to an HTTPS server is told to use https://, as Go's server answers it."""
        def https_only(h: Scripted) -> None:
            h.send(400, b"Client sent an HTTP request to an HTTPS server.\n", "")

        s = self.serve(https_only)
        with self.assertRaises(braid.WrongURLError) as cm:
            braid.Client(s.url, retry_for=5).jobs()
        https = s.url.replace("http://", "https://")
        self.assertEqual((cm.exception.status, cm.exception.base), (400, https))
        self.assertIn("it is an HTTPS server; give the server's base URL, such as " + https, str(cm.exception))


if __name__ == "__main__":
    unittest.main()
