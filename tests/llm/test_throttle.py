"""The adaptive concurrency limit (AIMD): halved once per round on overload, grown by one a round on success."""

from __future__ import annotations

import asyncio

from negvocab.llm.throttle import Throttle


def test_a_burst_of_overloads_halves_once_and_successes_grow_it_back_by_one_a_round():
    t = Throttle(16)
    epoch = t.epoch
    assert t.overloaded(epoch, "429") and t.allowed == 8
    assert not t.overloaded(epoch, "429")  # the same burst (sent before the decrease): not counted again
    assert t.allowed == 8 and t.decreases == 1
    for _ in range(8):  # one round of successes at 8 in flight: one more slot (limit += 1/limit each)
        t.succeeded()
    assert t.allowed == 8 and 8.9 < t.limit < 9.0  # 8 + sum of 1/limit over the round, just under 9
    t.succeeded()
    assert t.allowed == 9
    for _ in range(1000):
        t.succeeded()
    assert t.allowed == 16 and t.lowest == 8  # never above the concurrency asked for


def test_random_overloads_among_many_answers_are_no_rate_limit():
    t = Throttle(64)
    for _ in range(64):
        t.succeeded()
    assert not t.overloaded(t.epoch, "429")  # one in 65: a flaky server, not a limit
    assert t.allowed == 64
    epoch = t.epoch
    for _ in range(20):  # a quarter of the round and more, sent in the same round: a limit, halved once
        t.overloaded(epoch, "429")
    assert t.allowed == 32 and t.decreases == 1


def test_the_limit_holds_for_tasks_in_flight():
    async def go() -> int:
        t = Throttle(3)
        now = peak = 0

        async def one() -> None:
            nonlocal now, peak
            async with t:
                now += 1
                peak = max(peak, now)
                await asyncio.sleep(0.001)
                now -= 1

        t.overloaded(t.epoch, "429")  # 3 -> 1
        await asyncio.gather(*(one() for _ in range(10)))
        return peak

    assert asyncio.run(go()) == 1
