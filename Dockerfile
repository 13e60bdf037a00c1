# larkbot: slim Python, non-root (uid 10001), rg and fd for the code-search tools, `larkbot serve`.
# Everything lives under /data (LARKBOT_HOME); /app/config.example.yaml is the commented config
# to copy to /data/config.yaml. The same steps without Docker: `make image-check`.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    LARKBOT_HOME=/data

# bubblewrap sandboxes the shell tool where the container may create user namespaces (e.g.
# `--security-opt seccomp=unconfined`); elsewhere `larkbot doctor` warns that it cannot.
# WITH_BROWSER=1: Debian's Chromium and CJK fonts for the browser tools (Playwright's own
# browser download is never used). WITH_DESKTOP=1: Xvfb, xdotool and xclip for computer_use.
ARG WITH_BROWSER=0
ARG WITH_DESKTOP=0
RUN apt-get update \
 && apt-get install -y --no-install-recommends ripgrep fd-find ca-certificates tini bubblewrap \
 && if [ "$WITH_BROWSER" = "1" ]; then \
      apt-get install -y --no-install-recommends chromium fonts-noto-cjk; fi \
 && if [ "$WITH_DESKTOP" = "1" ]; then \
      apt-get install -y --no-install-recommends xvfb xdotool xclip; fi \
 && ln -s /usr/bin/fdfind /usr/local/bin/fd \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md config.example.yaml ./
COPY larkbot ./larkbot
COPY tools ./tools
COPY cards ./cards
RUN pip install --no-cache-dir '.[postgres]'

RUN useradd --create-home --uid 10001 larkbot \
 && mkdir -p /data && chown larkbot:larkbot /data
USER larkbot
VOLUME ["/data"]
EXPOSE 8080

# Follows the configured port (LARKBOT_PORT or server.port in the config) and says why when not
# healthy: `docker inspect --format '{{json .State.Health}}' larkbot`.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
  CMD ["python", "-m", "larkbot.healthcheck"]

ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["larkbot", "serve"]
