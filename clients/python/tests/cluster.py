"""A real braid cluster for the tests: one `braid server` and workers, as processes on loopback.

The binary is $BRAID_BIN, or built once from the repository with `go build`.
Everything lives in a temporary directory that stop() removes, with the
processes' logs, which a failing start prints.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable, List, Optional, Sequence

REPO = Path(__file__).resolve().parents[3]
SECRET = "python-client-test-secret"
START_TIMEOUT = 20.0


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def braid_binary(tmp: Path) -> str:
    """$BRAID_BIN, or a binary built from the repository into tmp."""
    b = os.environ.get("BRAID_BIN")
    if b:
        if not os.access(b, os.X_OK):
            raise RuntimeError(f"$BRAID_BIN={b} is not an executable")
        return b
    out = tmp / "braid"
    subprocess.run(["nice", "-n", "10", "go", "build", "-o", str(out), "./cmd/braid"], cwd=REPO, check=True, timeout=300)
    return str(out)


def _die_with_parent() -> None:
    """Has Linux stop the child when the test process dies, even by SIGKILL, so that no server outlives a killed run."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: stop() is the only cleanup


class Cluster:
    """A braid server and workers. Use start(), then stop() (also after a failed start)."""

    def __init__(self, workers: Sequence[Sequence[str]], server_args: Sequence[str] = ()) -> None:
        self.worker_args = [list(w) for w in workers]
        self.server_args = list(server_args)
        self.tmp = Path(tempfile.mkdtemp(prefix="braid-pytest-"))
        self.data = self.tmp / "data"
        self.procs: List[subprocess.Popen[bytes]] = []
        self.names: List[str] = []
        self.logs: List[Path] = []
        self.url = ""
        self.server_argv: List[str] = []
        self.token: Optional[str] = None

    def start(self) -> None:
        binary = braid_binary(self.tmp)
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.server_argv = [binary, "server", "--listen", f"127.0.0.1:{port}", "--data", str(self.data),
                            "--drain-timeout", "1s", "--log-level", "warn", *self.server_args]
        self.spawn("server", self.server_argv)
        self.until(self.healthy, "the server answers /healthz")
        # The server checks tokens (its default) and writes its first admin
        # token into its data directory.
        tok = self.data / "admin.token"
        if tok.exists():
            self.token = tok.read_text().strip() or None
        for i, args in enumerate(self.worker_args):
            self.spawn(f"worker{i + 1}", [binary, "worker", "--server", self.url,
                                          "--drain-timeout", "1s", "--log-level", "warn",
                                          "--wasm-cache", str(self.tmp / f"wasm{i + 1}"), *args])
        self.until(self.workers_up, f"{len(self.worker_args)} workers are up")

    def stop_server(self) -> None:
        """Stops the server (SIGTERM) and waits for it to exit."""
        p = self.procs[0]
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)

    def start_server(self) -> None:
        """Starts the server again, on its address and data directory, once stop_server has stopped it."""
        self.procs[0] = self.spawn_process("server", self.server_argv)
        self.until(self.healthy, "the restarted server answers /healthz")

    def spawn(self, name: str, argv: List[str]) -> None:
        self.procs.append(self.spawn_process(name, argv))
        self.names.append(name)

    def spawn_process(self, name: str, argv: List[str]) -> "subprocess.Popen[bytes]":
        log = self.tmp / f"{name}.log"
        if log not in self.logs:
            self.logs.append(log)
        with open(log, "ab") as out:
            # The secret goes in the environment: braid refuses --secret,
            # as every local user could read it in the command line.
            env = dict(os.environ, BRAID_SECRET=SECRET)
            return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    preexec_fn=_die_with_parent, env=env)

    def until(self, ok: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            for name, p in zip(self.names, self.procs):
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited with {p.returncode} before {what}\n{self.log_text()}")
            if ok():
                return
            time.sleep(0.05)
        raise RuntimeError(f"not within {START_TIMEOUT}s: {what}\n{self.log_text()}")

    def get(self, path: str) -> object:
        req = urllib.request.Request(self.url + path)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        with urllib.request.urlopen(req, timeout=2) as resp:
            return json.load(resp)

    def healthy(self) -> bool:
        try:
            self.get("/healthz")
            return True
        except (OSError, urllib.error.URLError, ValueError):
            return False

    def workers_up(self) -> bool:
        try:
            ws = self.get("/v1/workers")
        except (OSError, urllib.error.URLError, ValueError):
            return False
        assert isinstance(ws, list)
        return sum(1 for w in ws if w.get("state") == "up") == len(self.worker_args)

    def log_text(self) -> str:
        parts = []
        for log in self.logs:
            try:
                parts.append(f"--- {log.name}\n{log.read_text(errors='replace')[-4000:]}")
            except OSError:
                pass
        return "\n".join(parts)

    def stop(self) -> None:
        """Stops the processes (workers first), killing any that outlast 5 s, and removes the directory."""
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        shutil.rmtree(self.tmp, ignore_errors=True)
