"""Trigger building and wording: 5-field crontab (standard weekday numbers) and intervals."""

from __future__ import annotations

import re
from datetime import tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from larkbot.errors import ConfigError, LarkBotError

CRON_FIELDS = ("minute", "hour", "day", "month", "day_of_week")
_RANGES = {"minute": "0-59", "hour": "0-23", "day": "1-31", "month": "1-12", "day_of_week": "0-7"}
# APScheduler 3 numbers weekdays from Monday=0, crontab from Sunday=0 (apscheduler issue #286):
# "1-5" would silently mean Tue–Sat. We translate crontab weekdays to names ourselves.
_CRON_DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
_WEEK_ORDER = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
_ZH_DAYS = {
    "mon": "一",
    "tue": "二",
    "wed": "三",
    "thu": "四",
    "fri": "五",
    "sat": "六",
    "sun": "日",
}
_DOW_ITEM = re.compile(r"^(\*|[0-9a-z]{1,3}(?:-[0-9a-z]{1,3})?)(?:/(\d+))?$")


class ScheduleError(LarkBotError):
    """A schedule request that cannot be honoured; the message says what to change."""


def _day_number(token: str) -> int:
    if token.isdigit():
        n = int(token)
        if n > 7:
            raise ScheduleError(f"{n} is out of range (0 and 7 are Sunday)")
        return n % 7
    if token in _CRON_DAYS:
        return _CRON_DAYS.index(token)
    raise ScheduleError(f"unknown weekday {token!r} (use 0-7 or sun, mon, …, sat)")


def crontab_weekdays(field: str) -> list[str]:
    """The weekday names a crontab day-of-week field selects, in crontab semantics."""
    selected: set[int] = set()
    for item in field.lower().split(","):
        m = _DOW_ITEM.match(item)
        if not m:
            raise ScheduleError(f"cannot read {item!r}")
        body, step_text = m.group(1), m.group(2)
        step = int(step_text) if step_text else 1
        if step < 1:
            raise ScheduleError("a step must be at least 1")
        if body == "*":
            first, last = 0, 6
        elif "-" in body:
            a, b = body.split("-")
            first, last = _day_number(a), _day_number(b)
            if b == "7":
                last = 7  # "5-7" means Fri–Sun
            if first > last:
                raise ScheduleError(f"range {body!r} runs backwards")
        else:
            first = last = _day_number(body)
            if step_text:
                last = 6
        selected.update(n % 7 for n in range(first, last + 1, step))
    return [d for d in _WEEK_ORDER if _CRON_DAYS.index(d) in selected]


def cron_trigger(expr: str, tz: tzinfo) -> CronTrigger:
    """Validate a 5-field crontab expression and build its trigger in `tz`."""
    parts = expr.split()
    if len(parts) != 5:
        hint = " (seconds are not supported)" if len(parts) == 6 else ""
        raise ScheduleError(
            f"cron must have 5 fields 'minute hour day month weekday', got {len(parts)}{hint}: "
            f"{expr!r}; example: '0 9 * * *' = every day at 09:00"
        )
    values = dict(zip(CRON_FIELDS, parts, strict=True))
    for name in CRON_FIELDS[:4]:
        try:
            CronTrigger(**{name: values[name]}, timezone=tz)
        except ValueError as err:
            raise ScheduleError(
                f"cron {name} field {values[name]!r} is invalid: {err} (allowed {_RANGES[name]})"
            ) from None
    try:
        days = crontab_weekdays(values["day_of_week"])
    except ScheduleError as err:
        field = values["day_of_week"]
        raise ScheduleError(
            f"cron weekday field {field!r} is invalid: {err} (allowed 0-7 or sun-sat)"
        ) from None
    if values["day"] != "*" and values["day_of_week"] != "*":
        raise ScheduleError(
            "cron restricts both day-of-month and weekday; crontab would fire on either, "
            "this scheduler only on both — create two jobs instead"
        )
    dow = "*" if len(days) == 7 else ",".join(days)
    return CronTrigger(
        minute=values["minute"],
        hour=values["hour"],
        day=values["day"],
        month=values["month"],
        day_of_week=dow,
        timezone=tz,
    )


def interval_trigger(minutes: int, tz: tzinfo) -> IntervalTrigger:
    """An every-N-minutes trigger (N >= 1) in `tz`."""
    if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes < 1:
        raise ScheduleError(f"interval_minutes must be an integer >= 1, got {minutes!r}")
    return IntervalTrigger(minutes=minutes, timezone=tz)


_ZH_KINDS = {"daily": "每天", "weekdays": "工作日", "weekends": "周末"}


def describe(trigger: BaseTrigger, fallback: str = "", lang: str = "zh") -> str:
    """The trigger in words: "每天 09:00", "工作日 09:00", "每周一 09:00" for Lark readers
    (`lang="zh"`), "daily 09:00", "weekdays 09:00", "every Mon 09:00" in English."""
    if isinstance(trigger, IntervalTrigger):
        minutes = int(trigger.interval_length // 60)
        return f"every {minutes} min"
    if not isinstance(trigger, CronTrigger):
        return fallback or str(trigger)
    en = lang == "en"
    f = {field.name: str(field) for field in trigger.fields}
    at = _clock(f.get("hour", ""), f.get("minute", ""))
    plain = f.get("day") == "*" and f.get("month") == "*"
    if at and plain:
        days = f.get("day_of_week", "*")
        kind = {"*": "daily", "mon,tue,wed,thu,fri": "weekdays", "sat,sun": "weekends"}.get(days)
        if kind:
            return f"{kind if en else _ZH_KINDS[kind]} {at}"
        names = days.split(",")
        if all(n in _ZH_DAYS for n in names):
            if en:
                return "every " + ", ".join(n.capitalize() for n in names) + f" {at}"
            return "每周" + "、".join(_ZH_DAYS[n] for n in names) + f" {at}"
    if at and f.get("month") == "*" and f.get("day_of_week") == "*" and f["day"].isdigit():
        return f"monthly on day {f['day']}, {at}" if en else f"每月 {f['day']} 日 {at}"
    return fallback or str(trigger)


def _clock(hour: str, minute: str) -> str:
    if hour.isdigit() and minute.isdigit():
        return f"{int(hour):02d}:{int(minute):02d}"
    return ""


def zone(name: str) -> ZoneInfo:
    """`scheduler.timezone` as a ZoneInfo, or a ConfigError naming the key."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"scheduler.timezone: unknown time zone {name!r} (use an IANA name like Asia/Shanghai)"
        ) from None
