"""GuessNumberWorkflow and AccumulateWorkflow (seed 000): loops and shared state in ctx.store."""

from __future__ import annotations

import pytest
from batonflow.agents import AccumulateWorkflow, GuessNumberWorkflow


@pytest.mark.parametrize("target", [1, 37, 50, 64, 100])
async def test_binary_search_finds_the_target(target: int) -> None:
    """Any target in 1..100 is found within 7 attempts; the state holds the attempt count."""
    handler = GuessNumberWorkflow().run(target=target)
    result = await handler
    attempts = await handler.ctx.store.get("attempts")
    assert result == f"Found {target} in {attempts} attempt" + ("s" if attempts > 1 else "")
    assert 1 <= attempts <= 7


async def test_guess_progress_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    """Each wrong guess prints the feedback, the interval and the next guess."""
    assert await GuessNumberWorkflow().run(target=37) == "Found 37 in 3 attempts"
    assert capsys.readouterr().out.splitlines() == [
        "Attempt 1: 50 is too big; the number is in [1, 49]; next guess 25",
        "Attempt 2: 25 is too small; the number is in [26, 49]; next guess 37",
    ]


async def test_guesses_are_streamed_each_with_its_own_verdict() -> None:
    """Every checked guess is streamed with its own verdict, the winning one as correct."""
    from batonflow.agents import GuessChecked

    handler = GuessNumberWorkflow().run(target=37)
    checked = [
        (ev.attempt, ev.guess, ev.verdict, ev.low, ev.high)
        async for ev in handler.stream_events()
        if isinstance(ev, GuessChecked)
    ]
    await handler
    assert checked == [
        (1, 50, "too big", 1, 49),
        (2, 25, "too small", 26, 49),
        (3, 37, "correct", 37, 37),
    ]


async def test_first_guess_is_used() -> None:
    """first_guess= replaces the middle of the interval as the first try."""
    assert await GuessNumberWorkflow().run(target=10, first_guess=10) == "Found 10 in 1 attempt"


async def test_gives_up_after_max_attempts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run stops with the target named once MAX_ATTEMPTS guesses were wrong."""
    import batonflow.agents.guess_number as guess_number

    monkeypatch.setattr(guess_number, "MAX_ATTEMPTS", 2)
    handler = GuessNumberWorkflow().run(target=1)
    assert await handler == "Gave up after 2 attempts; the number was 1"
    assert await handler.ctx.store.get("attempts") == 2


@pytest.mark.parametrize("field", ["target", "first_guess"])
@pytest.mark.parametrize("value", [0, 101, 700])
async def test_numbers_outside_1_to_100_are_refused_by_run(field: str, value: int) -> None:
    """A target (or first guess) outside 1..100 is refused before the run starts."""
    with pytest.raises(ValueError, match=rf"{field}.*Input should be (greater|less) than"):
        GuessNumberWorkflow().run(**{field: value})


async def test_unknown_start_field_is_refused_by_run() -> None:
    """A misspelt field is an error naming it, not a silently random target."""
    with pytest.raises(ValueError, match=r"targt"):
        GuessNumberWorkflow().run(targt=7)


async def test_start_event_is_typed_and_seed_code_reads_it() -> None:
    """GuessNumberStart declares target/first_guess; the seed's ev.first_guess is None by default."""
    from batonflow.agents import GuessNumberStart

    ev = GuessNumberStart(target=5)
    assert (ev.target, ev.first_guess) == (5, None)
    schema = GuessNumberStart.model_json_schema()
    assert set(schema["properties"]) == {"target", "first_guess"}
    assert schema["properties"]["target"]["anyOf"][0] == {
        "maximum": 100,
        "minimum": 1,
        "type": "integer",
    }


def test_progress_printing_can_be_turned_off(capsys: pytest.CaptureFixture[str]) -> None:
    """print_progress=False keeps the run quiet (the server uses it); the stream still has it."""
    import asyncio

    from batonflow.agents import NumberAdded

    async def main() -> list[object]:
        guess = GuessNumberWorkflow(print_progress=False)
        assert await guess.run(target=37) == "Found 37 in 3 attempts"
        handler = AccumulateWorkflow(print_progress=False).run(numbers=[1, 2])
        added = [ev async for ev in handler.stream_events() if isinstance(ev, NumberAdded)]
        await handler
        return [(ev.total, ev.count) for ev in added]

    assert asyncio.run(main()) == [(1, 1), (3, 2)]
    assert capsys.readouterr().out == ""


async def test_random_target_when_none_given() -> None:
    """Without target=, a random number in 1..100 is picked and found."""
    handler = GuessNumberWorkflow().run()
    assert (await handler).startswith("Found ")
    assert 1 <= await handler.ctx.store.get("target") <= 100


async def test_string_numbers_from_a_command_line_work() -> None:
    """target='42' (as a CLI passes it) is read as a number; a non-number is a clear error."""
    assert (await GuessNumberWorkflow().run(target="42")).startswith("Found 42 in ")
    with pytest.raises(ValueError, match=r"target.*Input should be a valid integer"):
        GuessNumberWorkflow().run(target="x")


async def test_accumulate_sums_and_counts(capsys: pytest.CaptureFixture[str]) -> None:
    """The total and count are kept in the state; each step of the sum is printed."""
    handler = AccumulateWorkflow().run(numbers=[1, 2, 3.5])
    assert await handler == "Sum: 6.5, count: 3"
    assert await handler.ctx.store.get("total") == 6.5
    assert await handler.ctx.store.get("count") == 3
    assert capsys.readouterr().out.splitlines() == [
        "Running total: 1 after 1 number(s)",
        "Running total: 3 after 2 number(s)",
        "Running total: 6.5 after 3 number(s)",
    ]


@pytest.mark.parametrize("numbers", ["[4, 5]", "4,5"])
async def test_accumulate_reads_numbers_from_text(numbers: str) -> None:
    """numbers='[4, 5]' or '4,5' (from a command line) work."""
    assert await AccumulateWorkflow().run(numbers=numbers) == "Sum: 9, count: 2"


@pytest.mark.parametrize(
    "numbers, shown",
    [(None, "None"), ("abc", "'abc'"), ([1, "2"], r"\[1, '2'\]"), ([True], r"\[True\]")],
)
async def test_accumulate_refuses_non_numbers(numbers: object, shown: str) -> None:
    """Non-numeric input is refused by run(), quoting what was passed."""
    with pytest.raises(
        ValueError,
        match=rf"needs a list of numbers, got {shown}; e\.g\. run\(numbers=\[1, 2, 3\]\)",
    ):
        AccumulateWorkflow().run(numbers=numbers)
    with pytest.raises(ValueError, match="numbers"):
        AccumulateWorkflow().run()
