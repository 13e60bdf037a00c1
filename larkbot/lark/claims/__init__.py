"""The inbound journal: each message claimed once, with a lease, so every turn runs exactly once."""
