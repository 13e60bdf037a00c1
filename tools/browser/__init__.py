"""The engine behind the browser tools: one Chromium per process, one context per session.

`engine.BrowserEngine` owns the Playwright driver and the browser; `session.BrowserSession`
one agent session's context, tabs and egress proxy; `proxy.EgressProxy` applies web_fetch's
SSRF policy to every request a page makes; `snapshot` turns ARIA snapshots into refs.
"""
