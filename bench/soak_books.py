"""The soak's books: every message answered exactly once, every tick fired once, and figures."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from bench.soak_jobs import job_chat
from bench.soak_plan import Series, SoakResult

if TYPE_CHECKING:
    from bench.soak_jobs import JobTicker
    from bench.soak_rig import Proxy
    from bench.soak_run import Sender, Soak


def check(soak: Soak, sender: Sender, ticker: JobTicker, proxy: Proxy) -> SoakResult:
    """Compare what was sent with what the fake Lark received; name every broken promise."""
    plan, lark, marks = soak.plan, soak.lark, soak.marks
    result = SoakResult(plan)
    sent = sender.first_sent
    replies = {mid: lark.arrivals.get(mid, []) for mid in sent}
    lost = sorted(mid for mid, r in replies.items() if not r)
    doubled = sorted(mid for mid, r in replies.items() if len(r) > 1)
    if len(sent) != plan.events:
        result.failures.append(f"{plan.events - len(sent)} messages never sent")
    if lost:
        killed = marks.get("killed", float("inf"))
        where = [
            f"{m} {sender.event_ids.get(m)} acked by {_acks(proxy, m, killed)}" for m in lost[:5]
        ]
        result.failures.append(f"{len(lost)} messages never answered, e.g. {where}")
    if doubled:
        result.failures.append(f"{len(doubled)} answered more than once, e.g. {doubled[:5]}")
    if sender.lost:
        result.failures.append(f"{len(sender.lost)} events never acknowledged with a 200")

    def latency(mids: set[str], label: str) -> Series:
        return Series(
            label,
            [replies[m][0] - sent[m] for m in mids if replies.get(m)],
            expected=len(mids),
        )

    asked: Counter[str] = Counter()
    for per_replica in soak.asked:
        asked.update(token for token, _ in per_replica)
    redelivered = {f"om_soak_{t[1:]}" for t in _redelivered(plan.events, plan.redelivered)}
    result.series.append(latency(set(sent), "every message (event sent → reply at Lark)"))
    result.series.append(latency(redelivered & set(sent), "sent 4x at once to 3 replicas"))
    interrupted = _in_flight_at_kill(soak)
    result.series.append(latency(interrupted, "in flight at the kill -9 (finished elsewhere)"))
    jobs_cut = _jobs_in_flight_at_kill(soak)
    if "killed" in marks and not (interrupted or jobs_cut):
        result.failures.append("the kill -9 landed between turns: nothing was in flight")
    around = {
        m
        for m, t in sent.items()
        if marks.get("redis_down", 0) - 0.5 <= t <= marks.get("redis_up", 0) + 0.5
    }
    result.series.append(latency(around, "sent while Redis restarted (±0.5 s)"))
    ticks = sum(ticker.ticks)
    result.series.append(Series("scheduled ticks (due → message)", ticker.latency, ticks))
    for j, due in enumerate(ticker.ticks):
        if ticker.fired(j) != due:
            result.failures.append(f"job soakjob{j}: {ticker.fired(j)} messages for {due} ticks")
    result.failures.extend(f"{t} never fired" for t in ticker.never_fired)
    books = soak.approval_books
    if plan.approvals:
        label = "approvals (asked on one replica, clicked on another)"
        result.series.append(Series(label, books.resolved, plan.approvals))
        result.failures.extend(books.problems)
    job_runs = sum(n for token, n in asked.items() if token.startswith("job"))
    result.counts = {
        "messages": len(sent),
        "answered once": sum(1 for r in replies.values() if len(r) == 1),
        "lost": len(lost),
        "duplicated": len(doubled),
        "ticks": ticks,
        "job runs": job_runs,
        "job runs in flight at the kill -9 (re-run elsewhere)": jobs_cut,
        "turns run twice (re-taken after the kill)": sum(
            1 for token, n in asked.items() if token.startswith("m") and n > 1
        ),
        "sends absorbed by Lark's uuid dedup": lark.dedup_hits,
        "webhook answers other than 200": sum(sender.refused.values()),
    }
    for i, n in enumerate(proxy.forwarded):
        result.counts[f"replica {i} events"] = n
    for kind, n in sorted(sender.refused.items()):
        result.counts[f"  of which {kind}"] = n
    result.counts["approvals resolved"] = len(books.resolved)
    result.counts["  clicked on another replica"] = books.cross_replica
    return result


def _acks(proxy: Proxy, mid: str, since: float) -> str:
    """Which replicas answered 200 for a message, and when (seconds after the kill)."""
    return ", ".join(f"{i}@{t - since:+.2f}s" for i, t in proxy.acked.get(mid, [])) or "nobody"


def _redelivered(events: int, redelivered: int) -> list[str]:
    """Tokens (`m<i>`) of the messages sent 4x; mirrors `Soak._send_all`."""
    if not redelivered:
        return []
    every = max(1, events // redelivered)
    return [f"m{i}" for i in range(events) if i % every == every // 2]


def _jobs_in_flight_at_kill(soak: Soak) -> int:
    """Job runs whose model call reached the victim and whose job posted nothing since, by then."""
    killed = soak.marks.get("killed")
    if killed is None:
        return 0
    latest: dict[str, float] = {}
    for token, when in soak.asked[soak.victim]:
        if token.startswith("job") and when <= killed:
            latest[token] = when
    return sum(
        1
        for token, asked in latest.items()
        if not any(
            asked <= a <= killed for a in soak.lark.arrivals.get(job_chat(int(token[3:])), [])
        )
    )


def _in_flight_at_kill(soak: Soak) -> set[str]:
    """Messages whose model call reached the victim before the kill and had no reply by then."""
    killed = soak.marks.get("killed")
    if killed is None:
        return set()
    victim = soak.asked[soak.victim]
    mids = {f"om_soak_{t[1:]}" for t, when in victim if when <= killed and t.startswith("m")}
    return {m for m in mids if not any(a <= killed for a in soak.lark.arrivals.get(m, []))}
