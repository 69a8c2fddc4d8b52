"""A class following its teacher: one teacher steps every 2 s, N students' pages follow, on R replicas behind HAProxy.

    .venv/bin/python bench/follow.py --replicas 2 --students 60
    .venv/bin/python bench/follow.py --replicas 2 --students 60 --database postgres

Serves a class (deploy/classroom.py's `Classroom`: R replicas behind HAProxy, one
runs store: SQLite in a temporary folder, or with --database postgres a
PostgreSQL server started here, tests/postgres.py's, as LOOPSCOPE_DATABASE_URL).
Everyone speaks Streamlit's own protocol (tests/wire.py), as browsers on their own
machines would, through the balancer: the teacher turns presenter mode on, takes
a step, starts a class and then clicks every --every seconds (Step to the end
of two-tools, then Back to its first step); each student opens `/?class=CODE`
and does what its page does by itself: nothing but take the runs the server
sends it (the server reruns a follower's page when its class moves,
pages/views/wake.py), and tick any fragment timer the server would ask for.

For each click and each student: the time from the teacher's click being sent
until the student's page is sent that step's heading ("Step k of n", read from
what the server sends that student, never from the store). A student whose page
never showed a step the teacher showed is an error, as is an exception or an
error on any page. Also: the replicas' CPU time (and the database server's)
over all follower updates, and the peak memory (PSS) of the replicas, as
bench/load.py samples them. Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.load import Sampler, cpu_seconds, descendants, percentile, server_pids  # noqa: E402
from tests.browser import free_port  # noqa: E402
from tests.wire import AGENT, Bell, Follower, Wire  # noqa: E402

END = 10  # two-tools ends at its tenth step
MAX_STUDENTS = 200


def clicks(first: int = 1) -> list[tuple[str, tuple[int, int]]]:
    """The teacher's clicks after the first step: (button, the heading each student must then see)."""
    forward = [("live-step", (k, k)) for k in range(first + 1, END + 1)]
    back = [("live-back", (k, END)) for k in range(END - 1, 0, -1)]
    return forward + back


async def lesson(url: str, students: int, every: float, settle: float, time_limit: float,
                 count: int | None = None) -> dict:
    """The class, start to end: {"times": [...], "errors": [...], "updates": n, "code": ...}."""
    errors: list[str] = []
    teacher = Wire(url, agent=f"{AGENT} teacher")
    await teacher.open()
    await teacher.rerun("present", bool_value=True)
    await teacher.rerun("live-step")
    await teacher.rerun("classroom-start")
    code = dict(p.split("=", 1) for p in teacher.query.split("&") if "=" in p).get("class")
    if not code or teacher.errors:
        raise RuntimeError(f"the teacher's class did not start: {teacher.errors or teacher.query}")

    stop, bell = asyncio.Event(), Bell(students)
    followers = [Follower(url, code, agent=f"{AGENT} {n}") for n in range(students)]

    async def follow(n: int, follower: Follower) -> None:
        ready = False
        try:
            await follower.open()
            if (1, 1) not in follower.shown:
                raise RuntimeError("the class's page did not open at the class's step")
            ready = True
            await bell.ready()
            await follower.follow(stop, phase=random.random())
        except Exception as exc:  # a dropped connection, a page that did not open: counted, the others go on
            errors.append(f"student {n}: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}")
        finally:
            if not ready:
                bell.arrive()
            errors.extend(f"student {n}: {e}" for e in follower.errors)
            follower.errors.clear()

    tasks = [asyncio.create_task(follow(n, f)) for n, f in enumerate(followers)]
    await asyncio.wait_for(bell.rang.wait(), timeout=time_limit)
    sent: dict[tuple[int, int], float] = {}
    for button, step in clicks()[:count]:
        started = time.perf_counter()
        sent[step] = started
        await teacher.rerun(button)
        if teacher.status() != step:
            errors.append(f"the teacher's page shows {teacher.status()} after {button}, not {step}")
        await asyncio.sleep(max(0.0, started + every - time.perf_counter()))
    await asyncio.sleep(settle)  # the last step's stragglers
    stop.set()
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=time_limit)
    errors.extend(f"teacher: {e}" for e in teacher.errors)
    await teacher.close()
    for follower in followers:
        with_errors = False
        try:
            await follower.close()
        except Exception:
            with_errors = True
        if with_errors:
            errors.append(f"{follower.agent}: its connection did not close cleanly")

    times = []
    for n, follower in enumerate(followers):
        missed = [step for step in sent if step not in follower.shown]
        if missed:
            errors.append(f"student {n}: its page never showed step(s) {', '.join(f'{k} of {m}' for k, m in missed)}")
        times += [follower.shown[step] - at for step, at in sent.items() if step in follower.shown]
    return {"times": times, "errors": errors, "updates": len(sent) * students, "code": code}


def postgres_cpu(server) -> float:
    """CPU seconds of the PostgreSQL server's processes (it runs as its own user, not as this script's child)."""
    try:
        postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return sum(cpu_seconds(pid) for pid in descendants(postmaster))


def run(args) -> dict:
    from deploy.classroom import Classroom

    env = dict(os.environ)
    database = None
    if args.database == "postgres":
        from tests.postgres import Server, available

        if not available():
            raise SystemExit("PostgreSQL is missing: sudo apt-get install -y postgresql")
        database = Server()
        env["LOOPSCOPE_DATABASE_URL"] = database.database()
    try:
        with tempfile.TemporaryDirectory(prefix="loopscope-follow-") as folder:
            ports = [free_port() for _ in range(args.replicas + 1)]
            with Classroom(ports[1:], port=ports[0], host="127.0.0.1", folder=Path(folder) / "class",
                           runs=Path(folder) / "runs", env=env) as classroom:
                return measure(classroom, database, args)
    finally:
        if database is not None:
            database.stop()


def measure(classroom, database, args) -> dict:
    sampler = Sampler(server_pids(), server_pids(b"haproxy"))
    sampler.sample()
    idle, cpu_before, balancer_before = sampler.peak, sampler.cpu_of("server"), sampler.cpu_of("balancer")
    db_before = postgres_cpu(database) if database else 0.0
    load_before = os.getloadavg()[0]
    sampler.start()
    started, client_cpu = time.monotonic(), time.process_time()
    try:
        figures = asyncio.run(lesson(classroom.url, args.students, args.every, args.settle, args.time_limit,
                                    args.clicks))
    except Exception as exc:
        figures = {"times": [], "errors": [f"the class did not run: {type(exc).__name__}: {exc}"], "updates": 0}
    took, client_cpu = time.monotonic() - started, time.process_time() - client_cpu
    sampler.stop.set()
    sampler.join()
    sampler.sample()
    server_cpu = sampler.cpu_of("server") - cpu_before
    balancer_cpu = sampler.cpu_of("balancer") - balancer_before
    db_cpu = postgres_cpu(database) - db_before if database else 0.0
    times, errors, updates = figures["times"], figures["errors"], figures["updates"]

    where = "PostgreSQL (started here, Unix socket)" if database else "SQLite (one file, shared by the replicas)"
    print(f"\nA teacher clicking every {args.every:g} s, {args.students} students following · "
          f"{len(classroom.replicas)} replica(s) behind HAProxy · the store on {where}")
    print(f"  {os.cpu_count()} CPUs · {took:.0f} s · load average (1 min) {load_before:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")
    print(f"  follower updates: {len(times)} of {updates} ({updates // max(1, args.students)} teacher clicks × "
          f"{args.students} students)")
    if times:
        print(f"  teacher's click to the student's page showing the step: p50 {percentile(times, 0.5) * 1000:.0f} ms"
              f" · max {max(times) * 1000:.0f} ms · mean {statistics.mean(times) * 1000:.0f} ms")
    per = server_cpu / max(1, updates) * 1000
    db = f" · database server {db_cpu:.1f} s ({db_cpu / max(1, updates) * 1000:.1f} ms an update)" if database else ""
    print(f"  CPU time: replicas {server_cpu:.1f} s ({per:.1f} ms a follower update, the time between included)"
          f"{db} · balancer {balancer_cpu:.1f} s · this script (the wire clients) {client_cpu:.1f} s · "
          f"available {took * (os.cpu_count() or 1):.0f} s")
    print(f"  server memory (the replicas and their children, PSS): idle {idle / 2**20:.0f} MiB · "
          f"peak {sampler.peak / 2**20:.0f} MiB · balancer peak {sampler.balancer_peak / 2**20:.0f} MiB")
    for e in errors[:20]:
        print(f"    - {e}")
    print(f"  p95 {percentile(times, 0.95) * 1000:.0f} ms" if times else "  p95 – (no update seen)")
    print(f"  errors: {len(errors)}")
    return {**figures, "cpu": server_cpu, "db_cpu": db_cpu, "peak": sampler.peak}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=2, help="Streamlit processes behind the balancer")
    parser.add_argument("--students", type=int, default=60, help=f"followers (at most {MAX_STUDENTS})")
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite",
                        help="the runs store and the class's channel: SQLite (default) or a PostgreSQL started here")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between two of the teacher's clicks")
    parser.add_argument("--clicks", type=int, help=f"the teacher's clicks (default {len(clicks())}: Step to the "
                                                     "end of two-tools, then Back to its first step)")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds given to the last step before the end")
    parser.add_argument("--time-limit", type=float, default=600, help="seconds for the whole class")
    args = parser.parse_args(argv)
    if args.replicas < 1:
        parser.error("--replicas must be at least 1")
    args.students = max(1, min(args.students, MAX_STUDENTS))
    return 1 if run(args)["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
