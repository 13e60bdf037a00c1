"""Cron validation, crontab weekday semantics and trigger wording."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from larkbot.scheduler.triggers import (
    ScheduleError,
    cron_trigger,
    crontab_weekdays,
    describe,
    interval_trigger,
)

TZ = ZoneInfo("Asia/Shanghai")


@pytest.mark.parametrize(
    ("expr", "words"),
    [
        ("0 9 * * *", "每天 09:00"),
        ("30 8 * * 1-5", "工作日 08:30"),
        ("0 9 * * mon-fri", "工作日 09:00"),
        ("0 10 * * 0,6", "周末 10:00"),
        ("0 9 * * 1", "每周一 09:00"),
        ("0 18 * * 7", "每周日 18:00"),
        ("0 9 1 * *", "每月 1 日 09:00"),
        ("*/15 * * * *", "*/15 * * * *"),
        ("0 9-17 * * *", "0 9-17 * * *"),
    ],
)
def test_valid_cron_and_its_words(expr: str, words: str) -> None:
    assert describe(cron_trigger(expr, TZ), expr) == words


@pytest.mark.parametrize(
    ("expr", "words"),
    [
        ("0 9 * * *", "daily 09:00"),
        ("30 8 * * 1-5", "weekdays 08:30"),
        ("0 10 * * 0,6", "weekends 10:00"),
        ("0 9 * * 1,3", "every Mon, Wed 09:00"),
        ("0 18 * * 7", "every Sun 18:00"),
        ("0 9 1 * *", "monthly on day 1, 09:00"),
        ("0 9-17 * * *", "0 9-17 * * *"),
    ],
)
def test_english_words_for_the_cli(expr: str, words: str) -> None:
    assert describe(cron_trigger(expr, TZ), expr, lang="en") == words


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("0 9 * * * *", "5 fields.*got 6.*seconds are not supported"),
        ("0 9 * *", "5 fields.*got 4"),
        ("", "5 fields.*got 0"),
        ("61 9 * * *", "minute field '61'.*59"),
        ("0 24 * * *", "hour field '24'.*23"),
        ("0 9 32 * *", "day field '32'.*31"),
        ("0 9 * 13 *", "month field '13'.*12"),
        ("0 9 * * 8", "weekday field '8'.*out of range"),
        ("0 9 * * 5-1", "weekday field '5-1'.*backwards"),
        ("every day at nine", "5 fields"),
        ("foo bar baz qux quux", "minute field 'foo'"),
        ("0 nine * * *", "hour field 'nine'"),
        ("*/0 * * * *", "minute field.*Increment"),
        ("0 9 1 * 1", "both day-of-month and weekday"),
    ],
)
def test_invalid_cron_names_the_problem(expr: str, message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        cron_trigger(expr, TZ)


def test_crontab_weekday_numbers_are_not_apschedulers() -> None:
    # APScheduler 3 counts Monday as 0; crontab counts Sunday as 0 (and 7).
    assert crontab_weekdays("1-5") == ["mon", "tue", "wed", "thu", "fri"]
    assert crontab_weekdays("0") == crontab_weekdays("7") == ["sun"]
    assert crontab_weekdays("*/2") == ["tue", "thu", "sat", "sun"]
    assert crontab_weekdays("5-7") == ["fri", "sat", "sun"]
    monday = datetime(2026, 11, 30, 8, 0, tzinfo=TZ)  # a Monday
    fire = cron_trigger("0 9 * * 1", TZ).get_next_fire_time(None, monday)
    assert fire is not None and fire.weekday() == 0 and fire.hour == 9


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "10"])
def test_interval_must_be_a_positive_integer(bad: object) -> None:
    with pytest.raises(ScheduleError, match=">= 1"):
        interval_trigger(bad, TZ)  # type: ignore[arg-type]


def test_interval_words() -> None:
    assert describe(interval_trigger(30, TZ)) == "every 30 min"
