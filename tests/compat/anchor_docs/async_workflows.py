# Ported from the anchor's docs page llamaagents/workflows/async_workflows.md.
# Filled in: `requests` is a stand-in whose get() answers without a network; the file the
# page reads is written first; the CPU loop runs 100_000 times instead of 1_000_000; the
# pools are shut down at the end. The sync step also prints whether it ran off the event
# loop's thread and whether it saw the caller's contextvar, the two things the page promises.
import asyncio
import contextvars
import json
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

from _fakes import FakeRequests
from workflows import Workflow, step
from workflows.events import Event, StartEvent, StopEvent

requests = FakeRequests()
caller = contextvars.ContextVar("caller", default="unset")


class SyncStepWorkflow(Workflow):
    @step
    def fetch_data(self, ev: StartEvent) -> StopEvent:
        # This runs in a thread automatically — the event loop stays free
        print("sync step in main thread:", threading.current_thread() is threading.main_thread())
        print("sync step sees contextvar:", caller.get())
        response = requests.get("https://api.example.com/data")
        return StopEvent(result=response.json())


class BlockingIOWorkflow(Workflow):
    @step
    async def fetch_data(self, ev: StartEvent) -> StopEvent:
        # Good: run the blocking call in a thread so the event loop stays free
        response = await asyncio.to_thread(requests.get, "https://api.example.com/data")
        return StopEvent(result=response.json())


def read_large_file(path: str) -> dict:
    """A synchronous function that reads and parses a large JSON file."""
    return json.loads(Path(path).read_text())


class FileReaderWorkflow(Workflow):
    @step
    async def process_file(self, ev: StartEvent) -> StopEvent:
        data = await asyncio.to_thread(read_large_file, ev.file_path)
        return StopEvent(result=data)


# A small, dedicated pool for CPU-bound work.
cpu_pool = ThreadPoolExecutor(max_workers=2)


def expensive_computation(data: str) -> str:
    """A CPU-intensive operation, e.g. data parsing or transformation."""
    result = data
    for _ in range(100_000):
        result = result.strip()
    return result


class ComputeEvent(Event):
    data: str


class CPUWorkflow(Workflow):
    @step
    async def start(self, ev: StartEvent) -> ComputeEvent:
        return ComputeEvent(data=ev.input_data)

    @step
    async def compute(self, ev: ComputeEvent) -> StopEvent:
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(cpu_pool, expensive_computation, ev.data)
        return StopEvent(result=result)


async def main():
    caller.set("main")
    print(await SyncStepWorkflow().run())
    print(await BlockingIOWorkflow().run())
    Path("large.json").write_text(json.dumps({"documents": 2, "pages": [10, 12]}))
    print(await FileReaderWorkflow().run(file_path="large.json"))
    print(repr(await CPUWorkflow().run(input_data="  padded input  ")))
    process_pool = ProcessPoolExecutor(max_workers=2)
    process_pool.shutdown()
    cpu_pool.shutdown()


asyncio.run(main())
