"""What ``bench/scale_model.py`` runs its measurements with: ``batonflow serve`` replicas, a
fresh database per figure, a sampler of what PostgreSQL's backends wait for, and an HTTP load
of runs started with ``wait=true`` that counts every status instead of stopping at the first
error (a crowd of replicas may answer some with ``503``).
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _cpu_quota import CpuGroup  # noqa: E402
from http_compare import _wait_listening  # noqa: E402

FLOWS = HERE / "_scale_flows.py"
HTTP_FLOWS = HERE / "_http_flows.py"
#: The replicas' log line that says they listen.
READY = "batonflow server on "


class Replica:
    """A ``batonflow serve`` subprocess on ``db`` serving chain, ask and steps (of the
    batonflow whose ``src`` folder is ``code``, when given: another version's, to compare),
    in the CPU group ``group`` when given (``--replica-cpu``)."""

    def __init__(
        self,
        db: str,
        tmp: Path,
        name: str,
        lease: float = 15.0,
        code: Path | None = None,
        group: CpuGroup | None = None,
    ) -> None:
        self.name = name
        self.log = tmp / f"{name}.err"
        args = [
            sys.executable, "-m", "batonflow", "serve", "--port", "0", "--db", db,
            "--no-prebuilt", "--quiet", "--replica-id", name, "--lease-seconds", str(lease),
            "-w", f"chain={FLOWS}:Chain", "-w", f"ask={FLOWS}:Ask",
            "-w", f"steps={HTTP_FLOWS}:ThreeSteps",
        ]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OTEL_"))}
        if code is not None:
            env["PYTHONPATH"] = str(code)
        with open(self.log, "w") as err:
            self.proc = subprocess.Popen(
                args,
                cwd=tmp,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
                preexec_fn=group.enter() if group else None,
            )
        self.address: tuple[str, int] | None = None

    def ready(self) -> bool:
        """Wait until it listens (True) or exited (False)."""
        try:
            self.address = _wait_listening(self.proc, READY, self.log)
        except RuntimeError:
            return False
        return True

    @property
    def url(self) -> str:
        assert self.address is not None
        return f"http://{self.address[0]}:{self.address[1]}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _database(server: Any) -> tuple[str, str]:
    import psycopg

    name = "s_" + uuid.uuid4().hex[:10]
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name, server.url(name)


def _drop(server: Any, name: str) -> None:
    import psycopg

    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


NOTIFY_WAITS = (
    "SELECT count(*) FROM pg_locks WHERE locktype = 'object' AND NOT granted "
    "AND classid = 'pg_database'::regclass AND objid = 0"
)


class Sampler(threading.Thread):
    """Samples what PostgreSQL's active backends wait for, every ``every`` seconds."""

    def __init__(self, url: str, every: float = 0.02) -> None:
        import psycopg

        super().__init__(daemon=True)
        self.conn = psycopg.connect(url, autocommit=True)  # before the replicas take the slots
        self.every = every
        self.states: collections.Counter[str] = collections.Counter()
        self.samples = 0
        self.most_backends = 0
        self.notify_waits = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        query = (
            "SELECT state, wait_event_type, wait_event FROM pg_stat_activity "
            "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
        while not self.stopping.is_set():
            rows = self.conn.execute(query).fetchall()
            # Which object lock the Lock:object waits are for: NOTIFY's at commit is the
            # one on database 0 of pg_database (async.c: "Serialize writers...").
            self.notify_waits += self.conn.execute(NOTIFY_WAITS).fetchone()[0]
            self.samples += 1
            self.most_backends = max(self.most_backends, len(rows))
            for state, kind, event in rows:
                if state == "active":
                    self.states["running (CPU)" if kind is None else f"{kind}:{event}"] += 1
                elif state == "idle in transaction":
                    self.states["idle in transaction"] += 1
            time.sleep(self.every)

    def stop(self) -> dict[str, Any]:
        self.stopping.set()
        self.join(5)
        self.conn.close()
        n = max(self.samples, 1)
        return {
            "active": {k: v / n for k, v in self.states.most_common()},
            "most_backends": self.most_backends,
            "notify_lock_waits": self.notify_waits / n,
        }


async def _client(address: tuple[str, int], path: str, body: Any, out: dict[str, Any]) -> None:
    host, port = address
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while out["left"] > 0:
            out["left"] -= 1
            i = out["left"]
            payload = json.dumps(body(i)).encode()
            writer.write(
                f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\n\r\n".encode()
                + payload
            )
            raw = await reader.readuntil(b"\r\n\r\n")
            status = int(raw.split(b" ", 2)[1])
            length = 0
            for line in raw.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            data = json.loads(await reader.readexactly(length))
            ok = status == 200 and data.get("status") == "completed" and data["result"] == i + 1
            out["status"][status if ok or status != 200 else "200, wrong result"] += 1
            if not ok and len(out["errors"]) < 3:
                out["errors"].append(f"HTTP {status}: {json.dumps(data)[:300]}")
            out["ended"].append(time.monotonic())
    except (OSError, asyncio.IncompleteReadError) as exc:
        out["status"][f"connection: {type(exc).__name__}"] += 1
    finally:
        writer.close()


def load(addresses: list[tuple[str, int]], flow: str, body: Any, clients: int, runs: int) -> Any:
    """``runs`` runs of ``flow`` by ``clients`` clients spread over ``addresses``: the HTTP
    statuses, a few errors, and runs/s after the first wave (one run per client)."""
    out: dict[str, Any] = {
        "left": runs,
        "ended": [],
        "status": collections.Counter(),
        "errors": [],
    }
    path = f"/workflows/{flow}/runs?wait=true&timeout=120"

    async def main() -> None:
        await asyncio.gather(
            *(_client(addresses[k % len(addresses)], path, body, out) for k in range(clients))
        )

    began = time.monotonic()
    asyncio.run(main())
    ended = sorted(out["ended"])
    rate = 0.0
    if len(ended) > clients:
        rate = (len(ended) - clients) / max(ended[-1] - ended[clients - 1], 1e-9)
    out["runs_per_s"] = rate
    out["seconds"] = time.monotonic() - began
    return out
