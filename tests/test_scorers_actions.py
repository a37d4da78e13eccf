"""The action scorer (bench/actions.py, and bench/mcp_tools.py, whose lines have the same shape): a wrong
action for a request is a false positive and a miss, never a hit; a right action with other text is a
hit but not exact; a proposal where none was asked is a false positive."""

from __future__ import annotations

from bench.scorers.actions import Counts, Proposal, same_args, score, total

POST = {"action": "publish_post", "channel": "news", "text": "Doors open at 9"}
READ = {"action": "notes.read_note", "title": "groceries"}
NONE = {"action": "none"}


def test_the_right_action_with_the_right_arguments_is_an_exact_hit() -> None:
    proposed = [Proposal("publish_post", {"channel": "news", "text": "Doors open at 9"})]
    assert score(POST, proposed) == Counts(tp=1, exact=1)


def test_case_quotes_hash_and_spaces_are_set_aside() -> None:
    proposed = [Proposal("publish_post", {"channel": "#News", "text": " 'doors  open at 9' "})]
    assert score(POST, proposed) == Counts(tp=1, exact=1)


def test_a_wrong_action_for_a_request_is_a_false_positive_and_a_miss() -> None:
    proposed = [Proposal("send_message", {"to": "news", "text": "Doors open at 9"})]
    counts = score(POST, proposed)
    assert counts == Counts(fp=1, fn=1)
    assert counts.tp == 0


def test_the_right_action_with_wrong_text_is_a_hit_but_not_exact() -> None:
    assert score(POST, [Proposal("publish_post", {"channel": "news", "text": "Doors open at 10"})]) == Counts(tp=1)
    assert score(POST, [Proposal("publish_post", {"channel": "general", "text": "Doors open at 9"})]) == Counts(tp=1)


def test_an_argument_nobody_asked_for_is_not_exact() -> None:
    assert not same_args({"channel": "news", "text": "Hi", "forget": 3}, {"channel": "news", "text": "Hi"})
    assert same_args({"channel": "news", "text": "Hi", "forget": 0}, {"channel": "news", "text": "Hi"})
    assert not same_args({"channel": "news"}, {"channel": "news", "text": "Hi"})


def test_a_time_is_compared_as_the_instant_it_names() -> None:
    label = {"action": "schedule_post", "channel": "news", "text": "Hi", "at": "2026-11-23T09:00:00+00:00"}
    same = [Proposal("schedule_post", {"channel": "news", "text": "Hi", "at": "2026-11-23T10:00:00+01:00"})]
    other = [Proposal("schedule_post", {"channel": "news", "text": "Hi", "at": "2026-11-23T10:00:00Z"})]
    no_offset = [Proposal("schedule_post", {"channel": "news", "text": "Hi", "at": "2026-11-23T09:00:00"})]
    assert score(label, same).exact == 1
    assert score(label, other) == Counts(tp=1)
    assert score(label, no_offset) == Counts(tp=1)


def test_a_proposal_on_a_none_line_is_a_false_positive() -> None:
    assert score(NONE, [Proposal("publish_post", {"channel": "news", "text": "hi"})]) == Counts(fp=1)
    assert score(NONE, []) == Counts()


def test_a_request_with_no_proposal_is_a_miss() -> None:
    assert score(POST, []) == Counts(fn=1)


def test_a_second_proposal_beside_the_right_one_is_a_false_positive() -> None:
    proposed = [
        Proposal("publish_post", {"channel": "news", "text": "Doors open at 9"}),
        Proposal("send_message", {"to": "Ben", "text": "Doors open at 9"}),
    ]
    assert score(POST, proposed) == Counts(tp=1, fp=1, exact=1)


def test_mcp_tools_the_same_way() -> None:
    assert score(READ, [Proposal("notes.read_note", {"title": "Groceries"})]) == Counts(tp=1, exact=1)
    assert score(READ, [Proposal("notes.read_note", {"title": "budget"})]) == Counts(tp=1)
    wrong_tool = [Proposal("notes.write_note", {"title": "groceries", "text": "milk"})]
    assert score(READ, wrong_tool) == Counts(fp=1, fn=1)


def test_totals_add_every_line() -> None:
    lines = [
        score(POST, [Proposal("publish_post", {"channel": "news", "text": "Doors open at 9"})]),
        score(POST, [Proposal("send_message", {"to": "news", "text": "x"})]),
        score(NONE, [Proposal("publish_post", {"channel": "news", "text": "x"})]),
        score(READ, []),
    ]
    assert total(lines) == Counts(tp=1, fp=2, fn=2, exact=1)
