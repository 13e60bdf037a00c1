# larkbot: slim Python, non-root, rg and fd for the code-search tools, `larkbot serve`.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    LARKBOT_HOME=/data

# WITH_BROWSER=1: Debian's Chromium and CJK fonts for the browser tools (Playwright's own
# browser download is never used). WITH_DESKTOP=1: Xvfb, xdotool and xclip for computer_use.
ARG WITH_BROWSER=0
ARG WITH_DESKTOP=0
RUN apt-get update \
 && apt-get install -y --no-install-recommends ripgrep fd-find ca-certificates tini \
 && if [ "$WITH_BROWSER" = "1" ]; then \
      apt-get install -y --no-install-recommends chromium fonts-noto-cjk; fi \
 && if [ "$WITH_DESKTOP" = "1" ]; then \
      apt-get install -y --no-install-recommends xvfb xdotool xclip; fi \
 && ln -s /usr/bin/fdfind /usr/local/bin/fd \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY larkbot ./larkbot
COPY tools ./tools
COPY cards ./cards
RUN pip install --no-cache-dir '.[postgres]'

RUN useradd --create-home --uid 10001 larkbot \
 && mkdir -p /data && chown larkbot:larkbot /data
USER larkbot
VOLUME ["/data"]
EXPOSE 8080

HEALTHCHECK --interval=30s --timeout=3s --start-period=20s --retries=3 \
  CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=2).status == 200 else 1)"

ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["larkbot", "serve"]
