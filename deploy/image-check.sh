#!/bin/sh
# The Dockerfile's install steps without Docker: build the wheel, install it with the postgres
# extra into a clean venv, and run it as a non-root user with LARKBOT_HOME on a fresh folder.
# Checks what the image promises: config.example.yaml loads, an unwritable /data is one clear
# screen, the HEALTHCHECK command follows LARKBOT_PORT, /healthz is honest, /metrics answers.
# Run as root (it creates the uid-10001 user, like the image); `make image-check` runs it.
# PYTHON must be an interpreter every user can run (the image's /usr/local/bin/python; here
# the system one by default, not a pyenv build under /root).
set -eu
PYTHON=${PYTHON:-/usr/bin/python3}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/larkbot-image.XXXXXX)
pid=""
# serve's own pid (not su's): the shell that su starts writes its pid, then execs serve
serve_pid() { cat "$work/run/serve.pid" 2>/dev/null || true; }
stop_serve() {  # SIGTERM, then wait (bounded) until the process is gone; SIGKILL past that
  p=$(serve_pid); [ -n "$p" ] || return 0
  kill -TERM "$p" 2>/dev/null || return 0
  i=0
  while kill -0 "$p" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 300 ] || { kill -KILL "$p" 2>/dev/null || true; break; }
    sleep 0.1
  done
  rm -f "$work/run/serve.pid"
}
trap 'stop_serve; [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
say() { printf '\n== %s\n' "$*"; }
t0=$(date +%s)

say "wheel"
"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/pip" wheel -q --no-deps "$repo" -w "$work/dist" 2>&1 | grep -v '^WARNING' || true
"$work/venv/bin/pip" install -q "$(ls "$work"/dist/larkbot-*.whl)[postgres]" 2>&1 | grep -v '^WARNING' || true
cp "$repo/config.example.yaml" "$work/config.example.yaml"   # COPY config.example.yaml
chmod -R a+rX "$work"
echo "installed in $(( $(date +%s) - t0 )) s"

id larkbot >/dev/null 2>&1 || useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin larkbot
as_user() { su larkbot -s /bin/sh -c "$*"; }
larkbot="$work/venv/bin/larkbot"

say "an unwritable /data is one screen naming the fix"
mkdir -p "$work/data-root-owned" && chmod 755 "$work/data-root-owned"
if as_user "LARKBOT_HOME=$work/data-root-owned $larkbot serve" 2>"$work/err"; then
  echo "FAIL: serve started on an unwritable home"; exit 1
fi
cat "$work/err"
grep -q "cannot write to $work/data-root-owned" "$work/err"
grep -q "chown" "$work/err"

say "the example config loads; serve on LARKBOT_PORT; HEALTHCHECK follows it"
mkdir -p "$work/data" "$work/run" && chown larkbot "$work/data" "$work/run"
port=18$(( $(date +%s) % 900 + 100 ))
env="LARKBOT_HOME=$work/data LARKBOT_CONFIG=$work/config.example.yaml LARKBOT_PORT=$port"
env="$env LARKBOT_HOST=127.0.0.1 LARK_VERIFICATION_TOKEN=vt LLM_BASE_URL=http://127.0.0.1:9/v1"
as_user "echo \$\$ >$work/run/serve.pid && exec env $env $larkbot serve" 2>"$work/serve.log" &
pid=$!
i=0
until curl -s -o /dev/null "http://127.0.0.1:$port/healthz"; do
  i=$((i + 1)); [ $i -lt 300 ] || { echo "FAIL: serve did not listen"; cat "$work/serve.log"; exit 1; }
  sleep 0.1
done
[ -n "$(serve_pid)" ] || { echo "FAIL: serve's pid was not recorded"; exit 1; }
echo "listening after $(( $(date +%s) - t0 )) s in total"
# no Lark credentials: the web chat is the interface, so healthy; /readyz says so
as_user "$env $work/venv/bin/python -m larkbot.healthcheck" || { echo "FAIL: not healthy"; exit 1; }
curl -s "http://127.0.0.1:$port/readyz" | tee "$work/ready"; echo
grep -q "web chat only" "$work/ready"
other="LARKBOT_HOME=$work/data LARKBOT_CONFIG=$work/config.example.yaml LARKBOT_PORT=$((port + 1))"
if as_user "$other $work/venv/bin/python -m larkbot.healthcheck" 2>"$work/hc"; then
  echo "FAIL: the HEALTHCHECK did not follow LARKBOT_PORT"; exit 1
fi
grep -q "nothing answers" "$work/hc"
echo "expected: the HEALTHCHECK on port $((port + 1)), where nothing listens, fails:"
sed 's/^/  /' "$work/hc"
curl -s "http://127.0.0.1:$port/metrics" | grep -q '^larkbot_journal_backlog'
grep -q '"misconfigured"' "$work/serve.log"
# SIGTERM to serve itself (su need not pass it on); the drain: tests/test_lark_serve_process.py
stop_serve; wait "$pid" || true; pid=""
if curl -s -o /dev/null "http://127.0.0.1:$port/healthz"; then
  echo "FAIL: serve still answers after SIGTERM"; exit 1
fi
echo "OK: the image's steps work ($(( $(date +%s) - t0 )) s)"
