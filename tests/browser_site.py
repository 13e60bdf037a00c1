"""A local aiohttp site for the browser tests, the shared engine, and seams for the SSRF tests.

`public.test` is resolved by the test resolver (the SSRF check's declared seam, as in
web_fetch's tests) to a public-looking address, and the test connector dials that address to
the "public" site on 127.0.0.1. `internal.test` resolves to 127.0.0.1 itself. The connector
refuses every other non-loopback address, so nothing outside this machine is ever contacted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aiohttp import WSMsgType, web

from tools.browser.proxy import Streams, open_tcp

PUBLIC_IP = "93.184.215.14"  # looks public; the connector maps it to the public site
PUBLIC_HOST = "public.test"
INTERNAL_HOST = "internal.test"

HOME = """<!doctype html><html><head><title>Test shop</title></head><body>
<h1>Welcome to the test shop</h1>
<button onclick="document.getElementById('out').textContent='Order placed: #4711'">
Place order</button>
<p id="out">No order yet</p>
<form action="/result" method="get">
  <label>Search <input name="q"></label>
  <label>Colour <select name="colour"><option value="red">Red</option>
  <option value="blue">Blue</option></select></label>
  <button type="submit">Go</button>
</form>
<a href="/second">Second page</a>
<a href="/second" target="_blank">Second in a new tab</a>
<button onclick="alert('hello from the page')">Show alert</button>
<input type="file" aria-label="Attachment"
 onchange="document.getElementById('picked').textContent = 'picked ' + this.files[0].name +
 ' ' + this.files[0].size + ' bytes'">
<p id="picked">nothing picked</p>
</body></html>"""

DOWNLOADS = """<!doctype html><html><head><title>Files</title></head><body>
<a href="/file/report.csv" download="../../report.csv">Monthly report</a>
<a href="/file/big.bin" download>Big archive</a></body></html>"""
BIG_DOWNLOAD_BYTES = 2 * 1024 * 1024


async def _file(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    body = b"month,total\n2026-11,42\n" if name == "report.csv" else b"\0" * BIG_DOWNLOAD_BYTES
    disposition = f'attachment; filename="{name}"'
    return web.Response(body=body, headers={"Content-Disposition": disposition})


JS_PAGE = """<!doctype html><html><head><title>App</title></head><body><div id="app">Loading</div>
<script>setTimeout(() => { document.getElementById('app').innerHTML =
 '<h2>Rendered by JavaScript</h2><p>JS-ONLY-TEXT-8842 appears after the script runs.</p>'; }, 50);
</script></body></html>"""


BIG_PAGE = "<!doctype html><title>Catalogue</title>" + "".join(
    f"<button>Catalogue item number {n}</button>" for n in range(600)
)  # its snapshot is far over the result cap
SW_PAGE = """<!doctype html><title>Worker</title><p id="sw">registering</p><script>
navigator.serviceWorker.register('/sw.js').then(
  r => { document.getElementById('sw').textContent = r ? 'sw registered' : 'sw blocked'; },
  e => { document.getElementById('sw').textContent = 'sw failed ' + e; });
</script>"""


def ssrf_page(internal: str) -> str:
    """A page that tries to reach the internal server by fetch, name, redirect and WebSocket."""
    return f"""<!doctype html><html><head><title>Public page</title></head><body>
<h1>Public page</h1><p id="s">running</p><script>
const results = [];
async function probe(url) {{
  try {{ const r = await fetch(url); results.push('read ' + (await r.text())); }}
  catch (e) {{ results.push('failed ' + url); }}
}}
function ws(url) {{
  return new Promise(done => {{
    const sock = new WebSocket(url);
    sock.onopen = () => {{ results.push('ws open'); done(); }};
    sock.onerror = () => {{ results.push('ws failed'); done(); }};
  }});
}}
(async () => {{
  await probe('http://127.0.0.1:{internal}/secret?via=fetch');
  await probe('http://{INTERNAL_HOST}:{internal}/secret?via=name');
  await ws('ws://127.0.0.1:{internal}/ws');
  document.getElementById('s').textContent = 'probes done: ' + results.join(', ');
}})();
</script></body></html>"""


@dataclass
class Sites:
    """The public site, the internal site (which must never be reached) and their hits."""

    public: web.AppRunner
    internal: web.AppRunner
    public_port: int
    internal_port: int
    internal_hits: list[str] = field(default_factory=list)
    worker_fetches: list[str] = field(default_factory=list)  # requests for /sw.js

    @property
    def base(self) -> str:
        """The public site by its loopback address (for tests that allow private networks)."""
        return f"http://127.0.0.1:{self.public_port}"

    async def close(self) -> None:
        """Stop both servers."""
        await self.public.cleanup()
        await self.internal.cleanup()


def _html(text: str) -> web.Response:
    return web.Response(text=text, content_type="text/html")


def _page(text: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(_: web.Request) -> web.Response:
        return _html(text)

    return handler


async def start_sites() -> Sites:
    """Start both servers on ephemeral loopback ports."""
    internal_app = web.Application()
    hits: list[str] = []

    async def secret(request: web.Request) -> web.StreamResponse:
        hits.append(str(request.rel_url))
        if request.path == "/ws":
            sock = web.WebSocketResponse()
            await sock.prepare(request)
            async for msg in sock:
                if msg.type != WSMsgType.TEXT:
                    break
            return sock
        # CORS open: were it ever reached, the page could read the secret and show it
        return web.Response(text="INTERNAL-SECRET", headers={"Access-Control-Allow-Origin": "*"})

    internal_app.router.add_route("*", "/{tail:.*}", secret)
    internal = web.AppRunner(internal_app)
    await internal.setup()
    internal_site = web.TCPSite(internal, "127.0.0.1", 0)
    await internal_site.start()
    internal_port = internal.addresses[0][1]

    async def result(request: web.Request) -> web.Response:
        q, colour = request.query.get("q", ""), request.query.get("colour", "")
        return _html(f"<title>Results</title><h1>Results for {q} in {colour}</h1>")

    async def redirect(_: web.Request) -> web.Response:
        raise web.HTTPFound(f"http://127.0.0.1:{internal_port}/secret?via=redirect")

    worker_fetches: list[str] = []

    async def worker(request: web.Request) -> web.Response:
        worker_fetches.append(str(request.rel_url))
        return web.Response(text="self.onfetch = () => {};", content_type="text/javascript")

    public_app = web.Application()
    public_app.router.add_get("/", _page(HOME))
    public_app.router.add_get("/second", _page("<title>Second</title>Page 2"))
    public_app.router.add_get("/result", result)
    public_app.router.add_get("/js", _page(JS_PAGE))
    public_app.router.add_get("/ssrf", _page(ssrf_page(str(internal_port))))
    public_app.router.add_get("/redirect", redirect)
    public_app.router.add_get("/downloads", _page(DOWNLOADS))
    public_app.router.add_get("/file/{name}", _file)
    public_app.router.add_get("/big", _page(BIG_PAGE))
    public_app.router.add_get("/sw", _page(SW_PAGE))
    public_app.router.add_get("/sw.js", worker)
    public = web.AppRunner(public_app)
    await public.setup()
    public_site = web.TCPSite(public, "127.0.0.1", 0)
    await public_site.start()
    public_port = public.addresses[0][1]
    return Sites(public, internal, public_port, internal_port, hits, worker_fetches)


async def site_resolver(host: str, port: int) -> list[str]:
    """The declared DNS seam: the two test names; any other name does not resolve."""
    table = {PUBLIC_HOST: [PUBLIC_IP], INTERNAL_HOST: ["127.0.0.1"]}
    if host not in table:
        raise OSError(f"test resolver: {host} does not resolve")
    return table[host]


async def site_connector(address: str, port: int) -> Streams:
    """Dial the public-looking address to the local public site; loopback as is; else refuse."""
    if address == PUBLIC_IP:
        return await open_tcp("127.0.0.1", port)
    if address in ("127.0.0.1", "::1"):
        return await open_tcp(address, port)
    raise OSError(f"test connector: {address} is outside this machine")
