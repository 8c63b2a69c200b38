"""The lanes' own worker threads: they stop when the lanes are shut down or forgotten, the interpreter's exit
does not wait for ever on lanes nobody shut down, a call under way at exit is let finish, and a call handed
over but not started when the lanes shut down never runs. Real threads and real child interpreters."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import threading

from shipcode_mcp.transports.http.lanes import Lanes
from support import wait_for


def _workers(prefix: str) -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith(prefix)]


def _child(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)


def test_shut_down_lanes_stop_their_threads() -> None:
    lanes = Lanes(4, per_lane=0, thread_name_prefix="lanes-test-shutdown")
    done = threading.Barrier(5)

    def work() -> None:
        done.wait(30)

    for n in range(4):
        lanes.submit(n, work)
    done.wait(30)
    assert len(_workers("lanes-test-shutdown")) == 4
    lanes.shutdown()
    wait_for(lambda: not _workers("lanes-test-shutdown"), 30, "the threads to stop")


def test_forgotten_lanes_stop_their_threads() -> None:
    lanes = Lanes(2, per_lane=0, thread_name_prefix="lanes-test-forgotten")
    ran = threading.Event()
    lanes.submit("a", ran.set)
    assert ran.wait(30)
    assert _workers("lanes-test-forgotten")
    del lanes
    gc.collect()
    wait_for(lambda: not _workers("lanes-test-forgotten"), 30, "the threads of forgotten lanes to stop")


def test_a_call_handed_over_but_not_started_at_shutdown_never_runs() -> None:
    lanes = Lanes(1, per_lane=0, thread_name_prefix="lanes-test-handed")
    gate, started, second = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        started.set()
        assert gate.wait(30)

    lanes.submit("a", first)
    assert started.wait(30)
    lanes.submit("b", second.set)  # waits in its lane: the one thread is busy
    with lanes._lock:  # taken as a second thread would take it, and handed over: the one thread is still busy
        lanes.workers = 2
        taken = lanes._take()
    assert [call.key for call in taken] == ["b"]
    for call in taken:
        lanes._handed.put(call)
    lanes.shutdown()
    gate.set()
    wait_for(lambda: not _workers("lanes-test-handed"), 30, "the thread to stop")
    assert not second.is_set()


def test_the_exit_does_not_wait_for_lanes_nobody_shut_down() -> None:
    """Non-daemon threads waiting for calls would hold the interpreter's exit for ever."""
    result = _child("""
        import threading
        from shipcode_mcp.transports.http.lanes import Lanes
        keep = Lanes(4, per_lane=0)
        ran = threading.Event()
        keep.submit("a", ran.set)
        assert ran.wait(30)
        print("main done", flush=True)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "main done\n"


def test_a_call_under_way_at_exit_is_let_finish() -> None:
    result = _child("""
        import threading, time
        from shipcode_mcp.transports.http.lanes import Lanes
        keep = Lanes(2, per_lane=0)
        started = threading.Event()
        def work():
            started.set()
            time.sleep(0.5)  # the call's own work, under way when the main thread ends
            print("call finished", flush=True)
        keep.submit("a", work)
        assert started.wait(30)
        print("main done", flush=True)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "main done\ncall finished\n"
