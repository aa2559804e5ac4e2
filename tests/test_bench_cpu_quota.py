"""The benchmarks' CPU quota per process (``bench/_cpu_quota.py``, ``--replica-cpu``): a
process started in a group is held to its quota, the group is gone afterwards, and where
cgroups cannot be written the error says what to do."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Loaded from its file: bench/ on sys.path would shadow tests' modules of the same names.
_spec = importlib.util.spec_from_file_location(
    "_cpu_quota", Path(__file__).resolve().parents[1] / "bench" / "_cpu_quota.py"
)
assert _spec is not None and _spec.loader is not None
_cpu_quota = importlib.util.module_from_spec(_spec)
sys.modules["_cpu_quota"] = _cpu_quota  # dataclasses look their module up
_spec.loader.exec_module(_cpu_quota)
CpuQuota = _cpu_quota.CpuQuota
QuotaUnavailable = _cpu_quota.QuotaUnavailable

BUSY = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end: pass"


def _quota(cores: float) -> CpuQuota:
    try:
        quota = CpuQuota(cores, prefix="batonflow-test")
        quota.group("probe").remove()
    except QuotaUnavailable as exc:
        pytest.skip(f"no writable cgroup cpu controller here: {exc}")
    return quota


def test_a_process_in_a_group_is_held_to_its_quota_and_the_group_is_removed():
    """A busy process started in a group is in it, gets throttled, and the group goes after."""
    group = _quota(0.05).group("busy")
    proc = subprocess.Popen([sys.executable, "-c", BUSY], preexec_fn=group.enter())
    try:
        assert group.path.name in Path(f"/proc/{proc.pid}/cgroup").read_text()
        deadline = time.monotonic() + 30
        # The throttled time is counted when a throttled period ends.
        while (seen := group.throttling()).throttled_s == 0:
            assert time.monotonic() < deadline, "the quota never throttled a busy process"
            time.sleep(0.05)
        assert 0 < seen.share <= 1 and seen.throttled > 0
    finally:
        proc.kill()
        proc.wait()
        group.remove()
    assert not group.path.exists()


def test_no_cpu_controller_names_what_to_do(tmp_path, monkeypatch):
    """Without a cgroup cpu controller the error names the flag and how to do without it."""
    monkeypatch.setattr(_cpu_quota, "ROOT", tmp_path)
    with pytest.raises(QuotaUnavailable, match=r"no cgroup cpu controller.*leave --replica-cpu"):
        CpuQuota(0.4)


def test_a_group_that_cannot_be_created_names_what_to_do(tmp_path, monkeypatch):
    """A hierarchy that refuses the new group is reported with the path and the way out."""
    v1 = tmp_path / "cpu"
    v1.mkdir()
    (v1 / "cpu.cfs_quota_us").write_text("-1")
    monkeypatch.setattr(_cpu_quota, "ROOT", tmp_path)
    quota = CpuQuota(0.4)
    quota.parent = tmp_path / "missing"  # mkdir fails as on a read-only mount
    with pytest.raises(QuotaUnavailable, match=r"cannot create the CPU cgroup.*--replica-cpu out"):
        quota.group("r0")


def test_a_quota_beyond_the_machine_is_refused():
    """A quota of no core, or of more cores than the machine has, is refused with an example."""
    with pytest.raises(QuotaUnavailable, match="such as 0.4"):
        CpuQuota(0)


SIGTERMED = """
import subprocess, sys, time
sys.path.insert(0, {bench!r})
from _cpu_quota import CpuQuota, end_on_sigterm
group = CpuQuota(0.1, prefix="batonflow-test").group("term")
end_on_sigterm()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                         preexec_fn=group.enter())
try:
    print(group.path, flush=True)
    time.sleep(60)
finally:
    child.kill()
    child.wait()
    group.remove()
"""


def test_a_benchmark_ended_by_sigterm_removes_its_groups():
    """SIGTERM ends a benchmark through its finally blocks: its groups do not stay behind."""
    _quota(0.1)
    bench = str(Path(__file__).resolve().parents[1] / "bench")
    proc = subprocess.Popen(
        [sys.executable, "-c", SIGTERMED.format(bench=bench)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    path = Path(proc.stdout.readline().strip())
    assert path.exists()
    proc.terminate()
    assert proc.wait(30) == 128 + 15
    assert not path.exists(), f"{path} was left behind"
