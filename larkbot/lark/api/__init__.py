"""Talking to the Lark Open Platform: the client, its transport, what a message may hold (render,
refusals resent plainer), the month's budget and spending plan, pacing and errors."""
