"""One-scan onboarding: register (or update) the Lark app from a QR code, save what it returns.

`registration` runs Lark's device-style registration (lark-oapi's `scene.registration`),
`flow` decides what to ask for and what to do with the answer, `cli` and
larkbot/web/setup_api.py are its two faces, `doctor` compares the app with the scope manifest.
"""
