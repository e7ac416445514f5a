"""Is a warm process's second-run excess the host's clock (issue 15's "second run within 10%")?

Before each timed run, a fixed pure-Python workload (a loop over a few hundred integers: no memory traffic,
so only the core's clock and its wake-up decide its time) is timed; the run's wall time and the voluntary
context switches it took are kept beside it. Series: the first 16 runs after the first; then 6 runs after each
of a 0.1 s sleep and a 0.1 s busy loop. If the workload is slower before the second run and after the sleep, and
the runs after the busy loop show no excess, the excess is the core's clock ramping, not our work.
Prints one JSON line.

    python3 bench/experiments/second_run/clock.py LIB MODEL
"""
import json
import resource
import sys
import time

sys.path.insert(0, str(__import__('pathlib').Path(__file__).parent))
from session import open_session  # noqa: E402

lib, model = sys.argv[1], sys.argv[2]
sess, feeds = open_session(lib, model)


def work() -> float:
    """µs for a fixed loop (about 20 µs on a fast core)."""
    t = time.perf_counter()
    s = 0
    for i in range(600):
        s += i * i
    return (time.perf_counter() - t) * 1e6


def timed(n: int) -> list[dict]:
    rows = []
    for _ in range(n):
        w = work()
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t = time.perf_counter()
        sess.run(None, feeds)
        wall = (time.perf_counter() - t) * 1e3
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        rows.append({"wall": round(wall, 3), "work_us": round(w, 1), "vcsw": r1.ru_nvcsw - r0.ru_nvcsw})
    return rows


def busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


result = {"first": timed(1)[0], "runs": timed(16)}
time.sleep(0.1)
result["after_sleep"] = timed(6)
busy(0.1)
result["after_busy"] = timed(6)
time.sleep(0.1)
busy(0.02)
result["after_sleep_then_busy"] = timed(6)
print(json.dumps(result), flush=True)
