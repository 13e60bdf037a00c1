"""How an answer reaches Lark: plain replies, live and final cards, files, refused cards resent
plainer, and messages outside turns (scheduled jobs, direct notes)."""
