"""``grid run --stop-at WHEN``: durations, clock times and ISO dates made a
``time.time()``, against datetime arithmetic done here, in a fixed time zone."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from bnsl_dist.cli._common import stop_time

TZ = dt.timezone(dt.timedelta(hours=1))
#: 2026-11-27 23:50:00 at UTC+1
NOW = dt.datetime(2026, 11, 27, 23, 50, tzinfo=TZ).timestamp()


@pytest.fixture(autouse=True)
def utc_plus_one(monkeypatch):
    monkeypatch.setenv("TZ", "Etc/GMT-1")  # POSIX sign: UTC+1
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def at(*fields: int) -> float:
    return dt.datetime(*fields, tzinfo=TZ).timestamp()


@pytest.mark.parametrize(("text", "seconds"), [
    ("45s", 45), ("90m", 5400), ("90min", 5400), ("1.5h", 5400), ("2h30m", 9000),
    ("2h 30m", 9000), ("1d", 86400), ("1h5m10s", 3910)])
def test_durations(text, seconds):
    assert stop_time(text, now=NOW) == NOW + seconds


def test_clock_times_today_or_tomorrow():
    assert stop_time("23:59", now=NOW) == at(2026, 11, 27, 23, 59)
    assert stop_time("23:59:30", now=NOW) == at(2026, 11, 27, 23, 59, 30)
    assert stop_time("02:10", now=NOW) == at(2026, 11, 28, 2, 10)   # past today: tomorrow
    assert stop_time("23:50", now=NOW) == at(2026, 11, 28, 23, 50)  # now: tomorrow


def test_dates_and_times():
    assert stop_time("2026-11-28T02:10", now=NOW) == at(2026, 11, 28, 2, 10)  # local
    assert stop_time("2026-11-28T02:10+00:00", now=NOW) == at(2026, 11, 28, 3, 10)
    assert stop_time("2026-11-28 02:10:30", now=NOW) == at(2026, 11, 28, 2, 10, 30)


@pytest.mark.parametrize(("text", "says"), [
    ("soon", "give a duration"), ("5", "give a duration"), ("0s", "must be positive"),
    ("0h0m", "must be positive"), ("24:00", "hour must be in"), ("12:61", "minute must be"),
    ("2026-11-27T12:00", "is past"), ("", "give a duration"), ("h", "give a duration")])
def test_refusals_name_the_value(text, says):
    with pytest.raises(ValueError, match=says) as err:
        stop_time(text, now=NOW)
    assert repr(text) in str(err.value)
