"""The soak's load: clients that start runs, answer the waiting ones, and follow them over SSE.

Every client talks plain HTTP (``httpx``, no proxies, 127.0.0.1 only) to a random replica of
the pool, as clients behind a load balancer would, and behaves as a careful client should:

* a refused or broken connection, or a timeout, is retried on another replica;
* ``503`` is retried after its ``Retry-After`` (a ``503`` without one is a violation);
* any other ``5xx`` is a violation (noted with the replica whose log has the traceback) and
  is retried too, so the soak goes on.

Every loop is bounded in count and in time. An answer's value is made from the run id and
how many answers the run had accepted before (``<run>/a0``, ``<run>/a1``, ...), and a retry
sends the same value again, so the checks can tell which answer a run used.
"""

from __future__ import annotations

import contextlib
import queue
import random
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import EventSource
from soak_faults import ReplicaPool
from soak_records import Answer, Ledger, Reading, StartedRun

#: Statuses after which a run never changes again (the client's list).
ENDED = frozenset({"completed", "failed", "cancelled", "timed_out", "interrupted"})


def answer_value(run_id: str, accepted_before: int) -> str:
    """The answer a client gives ``run_id`` after ``accepted_before`` accepted answers."""
    return f"{run_id}/a{accepted_before}"


class Caller:
    """Requests to a random replica, retried as a careful client does (see the module doc).

    Args:
        pool: The replicas to choose from.
        ledger: Where codes, retries and violations are noted.
        rng: The random source for picking replicas.
        timeout: Seconds to wait for an answer (a stalled replica never answers).
    """

    def __init__(self, pool: ReplicaPool, ledger: Ledger, rng: random.Random, timeout: float):
        self.pool = pool
        self.ledger = ledger
        self.rng = rng
        self.http = httpx.Client(timeout=httpx.Timeout(timeout, connect=2.0), trust_env=False)

    def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        attempts: int = 12,
        budget: float = 60.0,
    ) -> tuple[httpx.Response | None, str]:
        """The first answer that is not a ``5xx``, and the log name of the replica; or ``None``."""
        deadline = time.monotonic() + budget
        avoid: str | None = None
        for attempt in range(attempts):
            if time.monotonic() > deadline:
                break
            replica = self.pool.pick(self.rng, avoid)
            if replica is None:
                time.sleep(0.5)
                continue
            if attempt:
                self.ledger.count("client retries")
            where = replica.log.name
            try:
                response = self.http.request(method, replica.url + path, json=json, params=params)
            except httpx.TransportError:
                self.ledger.count("connection errors and timeouts")
                avoid = replica.url
                time.sleep(min(0.2 * 2**attempt, 2.0))
                continue
            code = response.status_code
            self.ledger.count("requests")
            if code == 503:
                self.ledger.count("503 answers")
                retry_after = response.headers.get("retry-after")
                if retry_after is None:
                    self.ledger.violate(
                        "503 carries Retry-After",
                        None,
                        f"{method} {path} on {where}: 503 without Retry-After: "
                        f"{response.text[:300]}",
                        (where,),
                    )
                avoid = replica.url
                time.sleep(min(_seconds(retry_after), 3.0))
                continue
            if code >= 500:
                self.ledger.count(f"{code} answers")
                self.ledger.violate(
                    "no 5xx but 503",
                    _run_of(path),
                    f"{method} {path} on {where}: {code} {response.text[:300]}",
                    (where,),
                )
                avoid = replica.url
                time.sleep(0.5)
                continue
            return response, where
        self.ledger.count("requests given up")
        return None, ""

    def close(self) -> None:
        """Close the connections."""
        self.http.close()


class Load:
    """The client threads: starters, one watcher (that also answers) and SSE readers.

    Args:
        pool: The replicas.
        ledger: Where everything is noted.
        seed: The soak's seed (each thread draws from its own ``Random`` made from it).
        step_log: The file ``StepsFlow`` notes its steps in.
        until: ``time.monotonic()`` after which no run is started.
        max_in_flight: Runs started and not seen ended, at most.
        starters: How many threads start runs.
        readers: How many threads follow runs over SSE.
        timeout: A request's timeout.
    """

    def __init__(
        self,
        pool: ReplicaPool,
        ledger: Ledger,
        seed: int,
        step_log: Path,
        until: float,
        *,
        max_in_flight: int = 20,
        starters: int = 2,
        readers: int = 3,
        timeout: float = 6.0,
    ) -> None:
        self.pool = pool
        self.ledger = ledger
        self.seed = seed
        self.step_log = step_log
        self.until = until
        self.max_in_flight = max_in_flight
        self.timeout = timeout
        self.halt = threading.Event()  # stop everything now
        self.to_follow: queue.Queue[str] = queue.Queue(maxsize=50)
        self.threads = [
            *(self._thread(f"soak-start-{k}", self._starter, k) for k in range(starters)),
            self._thread("soak-watch", self._watcher, 100),
            *(self._thread(f"soak-read-{k}", self._reader, 200 + k) for k in range(readers)),
        ]

    def _thread(self, name: str, body: Any, k: int) -> threading.Thread:
        def guarded() -> None:
            caller = Caller(self.pool, self.ledger, random.Random(self.seed * 1000 + k), 6.0)
            try:
                body(caller, random.Random(self.seed * 1000 + k))
            except BaseException:
                self.ledger.violate(
                    "harness", None, f"{name} crashed:\n{traceback.format_exc(limit=8)}"
                )
            finally:
                caller.close()

        return threading.Thread(target=guarded, name=name, daemon=True)

    def start(self) -> None:
        """Start the threads."""
        for thread in self.threads:
            thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the threads and wait for them (each loop checks ``halt``)."""
        self.halt.set()
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.1, deadline - time.monotonic()))
            if thread.is_alive():
                self.ledger.violate("harness", None, f"{thread.name} did not stop in time")

    # -- starting runs ----------------------------------------------------------------------

    def _starter(self, caller: Caller, rng: random.Random) -> None:
        for _ in range(100_000):
            if self.halt.is_set() or time.monotonic() >= self.until:
                return
            # Runs stuck for a minute (a bug the checks will name) stop holding the load back.
            recent = [r for r in self.ledger.in_flight() if r.started_at > time.time() - 60]
            if len(recent) >= self.max_in_flight:
                time.sleep(0.2)
                continue
            fields = {
                "log": str(self.step_log),
                "n": rng.randrange(1000),
                "ask": rng.random() < 1 / 3,
                "pause": round(rng.uniform(0.2, 1.2), 2),
            }
            response, where = caller.call("POST", "/workflows/steps/runs", json=fields)
            if response is None:
                continue
            if response.status_code != 202:
                self.ledger.violate(
                    "starts are accepted",
                    None,
                    f"POST /workflows/steps/runs on {where}: {response.status_code} "
                    f"{response.text[:300]}",
                    (where,),
                )
                continue
            run_id = str(response.json()["run_id"])
            self.ledger.count("runs started")
            self.ledger.add_run(
                StartedRun(run_id, fields["n"], fields["ask"], fields["pause"], where, time.time())
            )
            with contextlib.suppress(queue.Full):
                self.to_follow.put_nowait(run_id)
            time.sleep(rng.uniform(0.05, 0.4))

    # -- watching and answering -------------------------------------------------------------

    def _watcher(self, caller: Caller, rng: random.Random) -> None:
        """Answer waiting runs (also ones no starter heard of) and note when runs end."""
        for _ in range(1_000_000):
            if self.halt.is_set():
                return
            asked_at = time.time()
            waiting = self._listed(caller, "waiting")
            running = self._listed(caller, "running")
            if waiting is None or running is None:
                continue
            for run_id in waiting:
                self._answer(caller, run_id)
            for run in self.ledger.in_flight():
                if run.started_at < asked_at and run.run_id not in waiting | running:
                    response, _ = caller.call("GET", f"/runs/{run.run_id}")
                    if response is not None and response.json().get("status") in ENDED:
                        self.ledger.ended(run.run_id)
            time.sleep(0.3)

    def _listed(self, caller: Caller, status: str) -> set[str] | None:
        response, _ = caller.call("GET", "/runs", params={"status": status, "limit": 1000})
        if response is None or response.status_code != 200:
            return None
        return {row["run_id"] for row in response.json()["runs"]}

    def _answer(self, caller: Caller, run_id: str) -> None:
        value = answer_value(run_id, self.ledger.accepted_answers(run_id))
        body = {"type": "HumanResponseEvent", "data": {"response": value}}
        response, where = caller.call("POST", f"/runs/{run_id}/events", json=body)
        code = None if response is None else response.status_code
        self.ledger.add_answer(run_id, Answer(value, code, where, time.time()))
        self.ledger.count(f"answers answered {code}")

    # -- following over SSE -----------------------------------------------------------------

    def _reader(self, caller: Caller, rng: random.Random) -> None:
        for _ in range(100_000):
            if self.halt.is_set():
                return
            try:
                run_id = self.to_follow.get(timeout=0.5)
            except queue.Empty:
                continue
            self._follow(caller, rng, run_id)

    def _follow(self, caller: Caller, rng: random.Random, run_id: str) -> None:
        """Follow one run to its end, reconnecting to another replica with Last-Event-ID."""
        reading = Reading(run_id)
        with self.ledger.lock:
            self.ledger.readings[run_id] = reading
        deadline = time.monotonic() + 240
        avoid: str | None = None
        last = 0
        for _ in range(200):
            if self.halt.is_set() or time.monotonic() > deadline:
                return
            replica = self.pool.pick(rng, avoid)
            if replica is None:
                time.sleep(0.5)
                continue
            if reading.replicas:
                reading.reconnects += 1
            reading.replicas.append(replica.log.name)
            headers = {"Last-Event-ID": str(last)} if last else {}
            try:
                with caller.http.stream(
                    "GET",
                    f"{replica.url}/runs/{run_id}/events",
                    headers=headers,
                    timeout=httpx.Timeout(self.timeout, connect=2.0),
                ) as response:
                    if response.status_code != 200:
                        reading.breaks.append(f"status {response.status_code}")
                        response.read()
                        if response.status_code >= 500 and response.status_code != 503:
                            self.ledger.violate(
                                "no 5xx but 503",
                                run_id,
                                f"GET /runs/{run_id}/events on {replica.log.name}: "
                                f"{response.status_code} {response.text[:300]}",
                                (replica.log.name,),
                            )
                        avoid = replica.url
                        time.sleep(0.5)
                        continue
                    for sse in EventSource(response).iter_sse():
                        if not sse.data:
                            continue
                        seq = int(sse.id)
                        if seq != last + 1:
                            reading.problems.append(
                                f"after seq {last} came seq {seq} ({sse.event}) from "
                                f"{replica.log.name}"
                            )
                            if seq <= last:
                                continue
                        reading.seen.append((seq, sse.event))
                        last = seq
                        if sse.event == "end":
                            reading.finished = True
                            return
                    reading.breaks.append("closed before the end")
            except httpx.TimeoutException:
                reading.breaks.append("timeout")  # a stalled replica, or a quiet stream
            except httpx.TransportError:
                reading.breaks.append("connection error")  # a dead or restarting replica
            avoid = replica.url
            time.sleep(0.2)


def _seconds(retry_after: str | None) -> float:
    try:
        return max(0.1, float(retry_after)) if retry_after is not None else 1.0
    except ValueError:
        return 1.0


def _run_of(path: str) -> str | None:
    parts = path.split("/")
    return parts[2] if len(parts) > 2 and parts[1] == "runs" else None
