# Loopscope's class server in containers: the layout of `make class`, run by compose.yaml (docs/deploy.md).
# Two images from this file:
#   replica   the app: Debian's Python 3.11, the pinned packages in a venv, what the tools' commands need, a user that
#             is not root. No Chromium: browsers are the students' own.
#   balancer  Debian's HAProxy with deploy/haproxy.cfg and deploy/compose-backend.cfg.
# Build both with `docker compose build`, or one with `docker build --target replica -t loopscope-replica .`

FROM debian:bookworm-slim AS base
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 LC_ALL=C.UTF-8

FROM base AS replica
# python3 (3.11) and its venv module; the commands the scripted model and a real model's tools run need bash and
# coreutils (in the base image), procps and python3; each command is sandboxed with bubblewrap and util-linux's
# prlimit and setpriv (docs/security.md).
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv bubblewrap util-linux procps ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# The user the server runs as, and the runs folder every replica shares (a volume): private to that user.
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/loopscope --shell /usr/sbin/nologin loopscope \
 && install -d -o loopscope -g loopscope -m 0700 /var/lib/loopscope /var/lib/loopscope/runs
WORKDIR /opt/loopscope
COPY requirements.txt ./
RUN python3 -m venv .venv && .venv/bin/pip install --no-cache-dir --upgrade pip \
 && .venv/bin/pip install --no-cache-dir -r requirements.txt
# The app (.dockerignore leaves out the tests, the benchmarks, the venv and any saved runs or secrets).
COPY . ./
USER loopscope
ENV LOOPSCOPE_RUNS=/var/lib/loopscope/runs PYTHONUNBUFFERED=1 HOME=/home/loopscope
EXPOSE 8501
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s \
  CMD ["/opt/loopscope/.venv/bin/python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=2).status != 200)"]
CMD ["/opt/loopscope/.venv/bin/python", "-m", "streamlit", "run", "app.py", "--server.address", "0.0.0.0", \
     "--server.port", "8501", "--server.headless", "true", "--browser.gatherUsageStats", "false"]

FROM base AS balancer
RUN apt-get update \
 && apt-get install -y --no-install-recommends haproxy \
 && rm -rf /var/lib/apt/lists/*
COPY deploy/haproxy.cfg deploy/compose-backend.cfg /etc/loopscope/
# Debian's package made the user `haproxy`; port 8500 needs no privilege.
USER haproxy
EXPOSE 8500
CMD ["haproxy", "-db", "-f", "/etc/loopscope/haproxy.cfg", "-f", "/etc/loopscope/compose-backend.cfg"]
