"""Approvals as cards: who must click, where the card goes, the answer on any replica, the audit."""
