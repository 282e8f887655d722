"""A failed Ray connection says why: Ray Client's ``Initialization failure from server:`` is
followed by the server's reason on later lines (ray/util/client/worker.py, ``_server_init``)."""

from __future__ import annotations

from negvocab.core.progress import Progress
from negvocab.grid.ray_engine import connection_reason


def test_the_servers_reason_follows_the_colon():
    msg = (
        'Traceback (most recent call last):\n  File "server.py", line '
        "1\nRuntimeError: Version mismatch: The cluster was started with Ray 2.49.0"
    )
    e = ConnectionAbortedError(f"Initialization failure from server:\n{msg}")  # Ray's own f-string
    assert (
        connection_reason(e)
        == "Initialization failure from server: RuntimeError: Version mismatch: The cluster was started with Ray 2.49.0"
    )
    empty = connection_reason(ConnectionAbortedError("Initialization failure from server:\n"))
    assert (
        empty.startswith("Initialization failure from server: (no reason given; see the ray_client_server")
        and "\n" not in empty
    )
    assert connection_reason(ConnectionError("")) == "ConnectionError"
    assert connection_reason(OSError("refused\nmore")) == "refused"


def test_progress_shows_a_second_rate_and_ticks_while_waiting(caplog):
    times = iter([0.0, 10.0, 20.0, 31.0, 62.0]).__next__
    caplog.set_level("INFO", logger="negvocab.core.progress")
    with Progress(4, "grid", "unit", bar=False, clock=times, extra="image") as p:
        p.update(1, extra=100)  # t=10: no line yet
        p.tick()  # t=20
        p.tick()  # t=31: a line though no unit finished since
        p.update(1, extra=60)  # t=62: a line
    assert [r.getMessage() for r in caplog.records] == [
        "grid: 1/4 units (25.0%), 0.0323 units/s, 3.23 images/s, ETA 1m33s",
        "grid: 2/4 units (50.0%), 0.0323 units/s, 2.58 images/s, ETA 1m02s",
    ]


def test_the_progress_interval_is_set_by_the_environment(monkeypatch, caplog):
    import negvocab.core.progress as P

    times = iter([0.0, 4.0, 6.0, 11.0]).__next__
    monkeypatch.setenv(P.EVERY_ENV, "5")
    caplog.set_level("INFO", logger="negvocab.core.progress")
    with Progress(3, "grid", "unit", bar=False, clock=times) as p:
        p.update(1)  # t=4: no line
        p.update(1)  # t=6: a line (5 s passed)
        p.tick()  # t=11: the next one
    assert [r.getMessage().split(",")[0] for r in caplog.records] == [
        "grid: 2/3 units (66.7%)",
        "grid: 2/3 units (66.7%)",
    ]
    for bad in ("soon", "-1", "0", "inf"):
        monkeypatch.setenv(P.EVERY_ENV, bad)
        assert P.log_interval() == P.LOG_EVERY_S
    assert sum(P.EVERY_ENV in r.getMessage() for r in caplog.records) == 4  # each bad value said once
    P.log_interval()
    assert sum(P.EVERY_ENV in r.getMessage() for r in caplog.records) == 4
