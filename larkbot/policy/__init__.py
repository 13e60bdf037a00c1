"""The one place that decides who may run which tool: `decide(tool, arguments, ctx)`.

`rules.py` holds the rules (Allow / Refuse / Ask), `gate.py` runs one call through them and
presents an Ask through the interface's consent provider, `grants.py` keeps session grants,
`redact.py` hides from a sender what the rules do not let them see in a shared history.
"""

from larkbot.policy.decision import Allow, Ask, Decision, Refuse
from larkbot.policy.gate import AuditSink, ToolGate, Verdict
from larkbot.policy.grants import ConsentStore, scope_covers
from larkbot.policy.rules import Policy, access, decide

__all__ = [
    "Allow",
    "Ask",
    "AuditSink",
    "ConsentStore",
    "Decision",
    "Policy",
    "Refuse",
    "ToolGate",
    "Verdict",
    "access",
    "decide",
    "scope_covers",
]
