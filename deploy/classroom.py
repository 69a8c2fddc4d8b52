"""A class server: N Loopscope replicas behind HAProxy, one runs store for them all.

    python deploy/classroom.py --replicas 2     # what `make class REPLICAS=2` runs
    → students open http://<this machine>:8500

Each replica is `streamlit run app.py` on a port of its own (8501, 8502, …) on
127.0.0.1 only: browsers reach them through the balancer alone. They share one
runs store (LOOPSCOPE_RUNS), so a run saved on one replica is resumed on any
other. HAProxy (Debian's `haproxy`; `make class` installs it like chromium)
reads deploy/haproxy.cfg and a backend file written here, one `server` line a
replica, and listens on :8500: sticky sessions by cookie, WebSockets,
health checks on /_stcore/health, and a browser whose replica died sent to a
live one (docs/deploy.md).

The class's folder (a new one in the temp folder unless --folder is given)
holds that backend file, the balancer's log (`balancer.log`, one line a
request) and each replica's output. Ctrl-C stops everything this started. A
replica that dies is started again (the balancer sends new browsers to it once
its health checks pass); one that cannot start is left down and said.

Across machines (docs/deploy.md): every replica points at one PostgreSQL
(`--database-url`, or LOOPSCOPE_DATABASE_URL); on the balancer's machine
`--remote HOST:PORT` adds a second machine's replicas to the backend, and on
that machine `--replicas-only --replica-host ADDRESS` runs the replicas alone,
listening on its address for the balancer (and no balancer there).

    python deploy/classroom.py --replicas 2 --database-url postgresql://… \
        --remote 10.0.0.2:8501 --remote 10.0.0.2:8502               # machine A: 2 replicas and HAProxy
    python deploy/classroom.py --replicas 2 --database-url postgresql://… \
        --replicas-only --replica-host 10.0.0.2 --port 8500 \
        --balancer 10.0.0.1                                          # machine B: 2 replicas on 8501, 8502

A replica counts what a browser may ask of it by the browser's address (loop/classroom/limits.py): the balancer's
X-Forwarded-For, believed only from the balancer's own address (LOOPSCOPE_BALANCER: this machine's loopback, or
`--balancer` for replicas on another machine).

`Classroom` is also what bench/load.py --replicas, bench/follow.py and the
tests use, on ports they choose and with a folder of their own.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import csv
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "deploy" / "haproxy.cfg"
BACKEND = "replicas"  # the backend's name in deploy/haproxy.cfg and the backend file
COOKIE = "loopscope_replica"  # the balancer's sticky cookie (deploy/haproxy.cfg)
STATS_USER = "loopscope"
START_SECONDS = 120.0  # a replica's first start imports streamlit, pandas and the SDK: slow on a busy machine
# One request in HAProxy's HTTP log format: `… [date] frontend backend/server timers status … {user agent} "GET / HTTP/1.1"`.
LOGGED = re.compile(r'\] (?P<frontend>\S+) (?P<backend>[^/\s]+)/(?P<server>\S+) \S+ (?P<status>-?\d+) '
                    r'.*?\{(?P<agent>[^}]*)\} "(?P<request>[^"]*)"')


def haproxy() -> str:
    """Debian's haproxy (in /usr/sbin, which a user's PATH may lack)."""
    found = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin:/usr/local/sbin")
    if not found:
        raise SystemExit("HAProxy is missing: `make haproxy` installs it as root, or: sudo apt-get install -y haproxy")
    return found


@dataclass
class Replica:
    """One `streamlit run app.py` of the class."""

    name: str  # its server name in the balancer, and its sticky cookie's value
    port: int
    log: Path
    host: str = "127.0.0.1"  # the address it listens on: this machine only, unless the balancer is on another
    process: subprocess.Popen | None = None
    started: float = 0.0

    @property
    def url(self) -> str:
        return f"http://{'127.0.0.1' if self.host in ('', '0.0.0.0') else self.host}:{self.port}"

    def start(self, env: dict[str, str]) -> None:
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
                 "--server.address", self.host, "--server.port", str(self.port),
                 "--browser.gatherUsageStats", "false"],
                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
        self.started = time.monotonic()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def healthy(self) -> bool:
        return _get(f"{self.url}/_stcore/health", timeout=2) == 200


@dataclass(frozen=True)
class Request:
    """A request as the balancer logged it."""

    server: str  # the replica it went to ("<NOSRV>" when none)
    status: int
    agent: str  # the User-Agent header
    method: str
    path: str


class Classroom:
    """N replicas and the balancer in front of them; a context manager that stops them all."""

    show_balancer = False  # the command line shows HAProxy's warnings (a replica DOWN or UP) on the terminal

    def __init__(self, replicas: int | list[int], *, port: int = 8500, host: str = "", folder: str | Path | None = None,
                 runs: str | Path | None = None, stats_password: str | None = None,
                 stats_port: int = 8404, env: dict[str, str] | None = None, database_url: str | None = None,
                 remote: list[str] | None = None, replicas_only: bool = False, replica_host: str = "127.0.0.1",
                 balancer_address: str | None = None):
        ports = list(range(port + 1, port + 1 + replicas)) if isinstance(replicas, int) else list(replicas)
        if not ports:
            raise ValueError("a class needs at least one replica")
        self.port, self.host, self.stats_port, self.stats_password = port, host, stats_port, stats_password
        self.folder = Path(folder) if folder else Path(tempfile.mkdtemp(prefix="loopscope-class-"))
        self.folder.mkdir(parents=True, exist_ok=True)
        self.runs = Path(runs or os.environ.get("LOOPSCOPE_RUNS") or ROOT / "runs").absolute()
        self.replicas = [Replica(f"r{n}", p, self.folder / f"replica-r{n}.log", replica_host)
                         for n, p in enumerate(ports, 1)]
        # Another machine's replicas (HOST:PORT), in the balancer's backend after this machine's: r<N+1>, …
        self.remote = [(f"r{n}", address) for n, address in enumerate(remote or [], len(ports) + 1)]
        self.replicas_only = replicas_only
        self.balancer: subprocess.Popen | None = None
        self.balancer_log = self.folder / "balancer.log"
        # LOOPSCOPE_CLASSROOM: a replica serves a class, though it listens on loopback: it lists no sessions folder.
        # LOOPSCOPE_BALANCER: where the balancer's connections come from, the only ones whose X-Forwarded-For a
        # replica believes (this machine's loopback, or the balancer's machine for replicas on another one).
        self.env = {**(env if env is not None else os.environ), "LOOPSCOPE_RUNS": str(self.runs),
                    "LOOPSCOPE_CLASSROOM": "1", "PYTHONUNBUFFERED": "1",
                    "LOOPSCOPE_BALANCER": balancer_address or ("" if replicas_only else "127.0.0.1,::1")}
        if database_url:  # the runs store and the class's channel, shared by every machine's replicas
            self.env["LOOPSCOPE_DATABASE_URL"] = database_url

    @property
    def url(self) -> str:
        return f"http://{self.host or '127.0.0.1'}:{self.port}"

    @property
    def stats_url(self) -> str | None:
        return f"http://127.0.0.1:{self.stats_port}/" if self.stats_password else None

    def replica(self, name: str) -> Replica:
        return next(r for r in self.replicas if r.name == name)

    # -- starting and stopping --
    def __enter__(self) -> "Classroom":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        """Start the replicas, wait until each answers its health check, then start the balancer."""
        program = None if self.replicas_only else haproxy()
        for replica in self.replicas:
            replica.start(self.env)
        for replica in self.replicas:
            self._wait(replica)
        if self.replicas_only:  # the balancer is on another machine
            return
        backend = self.folder / "backend.cfg"
        backend.write_text(self.backend())
        env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
               "LOOPSCOPE_BIND": f"{self.host}:{self.port}",
               "LOOPSCOPE_STATS_PASSWORD": self.stats_password or "",
               "LOOPSCOPE_STATS_BIND": f"127.0.0.1:{self.stats_port}"}
        with open(self.balancer_log, "ab") as out:
            # -db: in the foreground, warnings and health changes on stderr (the terminal), the log on stdout.
            self.balancer = subprocess.Popen([program, "-db", "-f", str(CONFIG), "-f", str(backend)],
                                             stdout=out, stderr=None if self.show_balancer else out, env=env)
        deadline = time.monotonic() + 30
        while _get(f"http://127.0.0.1:{self.port}/_stcore/health", timeout=2) != 200:
            if self.balancer.poll() is not None:
                raise RuntimeError(f"haproxy exited ({self.balancer.returncode}); see {self.balancer_log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the balancer did not answer on port {self.port} within 30 s")
            time.sleep(0.2)

    def backend(self) -> str:
        """The backend file: one server a replica, named in its sticky cookie."""
        lines = [f"backend {BACKEND}"]
        lines += [f"    server {r.name} {r.url.split('//', 1)[1]} cookie {r.name}" for r in self.replicas]
        lines += [f"    server {name} {address} cookie {name}" for name, address in self.remote]
        return "\n".join(lines) + "\n"

    def _wait(self, replica: Replica) -> None:
        deadline = time.monotonic() + START_SECONDS
        while not replica.healthy():
            if not replica.alive():
                raise RuntimeError(f"replica {replica.name} (port {replica.port}) exited: "
                                   + _tail(replica.log))
            if time.monotonic() > deadline:
                raise RuntimeError(f"replica {replica.name} did not answer on port {replica.port} within "
                                   f"{START_SECONDS:.0f} s")
            time.sleep(0.2)

    def stop(self) -> None:
        """Stop the balancer, then every replica (only the processes this started)."""
        for process in [self.balancer, *(r.process for r in self.replicas)]:
            if process is not None and process.poll() is None:
                process.terminate()
        for process in [self.balancer, *(r.process for r in self.replicas)]:
            if process is None:
                continue
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    # -- what the balancer saw --
    def requests(self) -> list[Request]:
        """Every request in the balancer's log, in order."""
        found = []
        with contextlib.suppress(FileNotFoundError):
            for line in self.balancer_log.read_text(errors="replace").splitlines():
                m = LOGGED.search(line)
                if m and m["backend"] == BACKEND:
                    method, _, rest = m["request"].partition(" ")
                    found.append(Request(m["server"], int(m["status"]), m["agent"], method, rest.rsplit(" ", 1)[0]))
        return found

    def stats(self) -> dict[str, dict[str, str]]:
        """The stats page's rows of the replicas' backend, by server name (needs the stats password)."""
        request = urllib.request.Request(f"{self.stats_url};csv")
        token = base64.b64encode(f"{STATS_USER}:{self.stats_password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
        with urllib.request.urlopen(request, timeout=5) as response:
            text = response.read().decode()
        rows = csv.DictReader(io.StringIO(text.lstrip("# ")))
        return {row["svname"]: row for row in rows if row["pxname"] == BACKEND}

    # -- the command line's loop --
    def supervise(self, every: float = 1.0) -> int:
        """Until Ctrl-C: start again a replica that died; stop all if the balancer dies. Returns an exit status."""
        failures = {r.name: 0 for r in self.replicas}
        while True:
            time.sleep(every)
            if self.balancer is not None and self.balancer.poll() is not None:
                print(f"the balancer exited ({self.balancer.returncode}); stopping the class. Its log: "
                      f"{self.balancer_log}", file=sys.stderr)
                return 1
            for replica in self.replicas:
                if replica.alive() or replica.process is None:
                    continue
                code = replica.process.returncode
                quick = time.monotonic() - replica.started < 30
                failures[replica.name] = failures[replica.name] + 1 if quick else 1
                if failures[replica.name] > 3:
                    print(f"replica {replica.name} (port {replica.port}) keeps exiting; left down. Its output: "
                          f"{replica.log}", file=sys.stderr)
                    replica.process = None
                    continue
                print(f"replica {replica.name} (port {replica.port}) exited ({code}); starting it again. Its "
                      "students reconnect to another replica; Resume brings their runs back.", file=sys.stderr)
                replica.start(self.env)


def _get(url: str, timeout: float) -> int | None:
    """The HTTP status of GET `url`, or None when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, ValueError):
        return None


def _tail(path: Path, chars: int = 2000) -> str:
    with contextlib.suppress(OSError):
        return path.read_text(errors="replace")[-chars:]
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=2, help="Streamlit processes (one a core)")
    parser.add_argument("--port", type=int, default=8500, help="the balancer's port; replicas take the next ones")
    parser.add_argument("--host", default="", help="the balancer's address (default: every interface)")
    parser.add_argument("--folder", help="where the balancer's log and the replicas' output go (default: a new "
                                         "folder in the temp folder)")
    parser.add_argument("--database-url", default=os.environ.get("LOOPSCOPE_DATABASE_URL"),
                        help="postgresql://… shared by every replica of every machine (default: "
                             "LOOPSCOPE_DATABASE_URL; unset: SQLite in the runs folder, one machine)")
    parser.add_argument("--remote", action="append", default=[], metavar="HOST:PORT",
                        help="a replica on another machine, added to the balancer (repeat for each)")
    parser.add_argument("--replicas-only", action="store_true",
                        help="run the replicas and no balancer: the second machine of a class")
    parser.add_argument("--replica-host", default="127.0.0.1",
                        help="the address the replicas listen on (with --replicas-only: this machine's address "
                             "that the balancer's machine reaches)")
    parser.add_argument("--balancer", metavar="ADDRESS",
                        help="with --replicas-only: the balancer's address as the replicas see it, whose "
                             "X-Forwarded-For they believe (default: none, each browser counts as the balancer)")
    args = parser.parse_args(argv)
    if args.replicas < 1:
        parser.error("--replicas must be at least 1")
    password = os.environ.get("LOOPSCOPE_STATS_PASSWORD") or None
    # Ctrl-C, or a SIGTERM, stops everything this started; even when started with SIGINT ignored (`nohup`, `&`).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    classroom = Classroom(args.replicas, port=args.port, host=args.host, folder=args.folder,
                          stats_password=password, stats_port=int(os.environ.get("LOOPSCOPE_STATS_PORT", 8404)),
                          database_url=args.database_url, remote=args.remote, replicas_only=args.replicas_only,
                          replica_host=args.replica_host, balancer_address=args.balancer)
    classroom.show_balancer = True
    ports = ", ".join(str(r.port) for r in classroom.replicas)
    stored = "a PostgreSQL database" if args.database_url else classroom.runs
    print(f"Starting {args.replicas} replica(s) on {args.replica_host} ports {ports}; saved runs in {stored}")
    try:
        with classroom:
            if args.replicas_only:
                print(f"\n  Replicas only, for the balancer on another machine: "
                      + ", ".join(f"{args.replica_host}:{r.port}" for r in classroom.replicas))
            else:
                print(f"\n  Loopscope class server: http://{args.host or 'localhost'}:{args.port}"
                      " (give students this machine's address with this port)")
            if classroom.stats_url and not args.replicas_only:
                print(f"  HAProxy stats: {classroom.stats_url} (user {STATS_USER}, LOOPSCOPE_STATS_PASSWORD)")
            print(f"  Logs: {classroom.folder} · Ctrl-C stops them all\n", flush=True)
            return classroom.supervise()
    except KeyboardInterrupt:
        return 0
    except RuntimeError as exc:
        print(f"The class could not start: {exc}", file=sys.stderr)
        return 1
    finally:
        print(f"Stopped. Logs: {classroom.folder}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
