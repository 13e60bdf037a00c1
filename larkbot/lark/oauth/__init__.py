"""Each person's own Lark authorization: the OAuth device flow, their tokens, calls made with them.

`/auth` starts a device flow (flow.py) whose token is checked to be the sender's, sealed with
AES-GCM (vault.py) and kept in the shared database (store.py); `LarkUserTokens` (tokens.py)
hands a valid token out and refreshes it once across replicas (lease.py); `LarkWorkspaceApi`
(api.py) calls the Open Platform with it. wiring.py puts them in the tool runtime.
"""
