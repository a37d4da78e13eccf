"""A request's risk level is one pure decision (graph/risk.py), and [approvals] auto_approve_risk lets
calls at or below it run at once in in-the-loop channels only (graph/policy.py verdict)."""

from __future__ import annotations

import pytest

from graph.action_runner import ActionRunner
from graph.actions import declared_risk
from graph.mcp import ToolCatalog
from graph.policy import PolicySettings, ToolStanding, Trust, Verdict, verdict
from graph.risk import Risk, risk_of
from storage.records import ApprovalMode


def test_a_declared_risk_stands_unless_the_action_is_sensitive() -> None:
    assert risk_of(declared=Risk.LOW, sensitive=False) is Risk.LOW
    assert risk_of(declared=Risk.MEDIUM, sensitive=False) is Risk.MEDIUM
    # Sensitive raises to at least high; it never lowers a critical one.
    assert risk_of(declared=Risk.LOW, sensitive=True) is Risk.HIGH
    assert risk_of(declared=Risk.CRITICAL, sensitive=True) is Risk.CRITICAL


def test_an_undeclared_risk_is_medium_for_a_built_in_action_and_by_read_only_for_an_mcp_tool() -> None:
    assert risk_of(declared=None, sensitive=False) is Risk.MEDIUM
    assert risk_of(declared=None, sensitive=False, mcp_read_only=True) is Risk.LOW
    assert risk_of(declared=None, sensitive=False, mcp_read_only=False) is Risk.HIGH
    assert risk_of(declared=Risk.LOW, sensitive=False, mcp_read_only=False) is Risk.LOW  # config said so


def test_the_built_in_actions_declare_their_risk() -> None:
    assert declared_risk("remember") is Risk.LOW
    assert declared_risk("delete_post") is Risk.HIGH
    assert declared_risk("publish_post") is Risk.MEDIUM  # and high once sensitive ("publish")
    assert declared_risk("notes.write_note") is None


def test_the_runner_names_each_call_its_risk_from_declarations_and_config() -> None:
    catalog = ToolCatalog(
        {"notes": ["read_note"], "time": []},
        risks={"notes": {"write_note": "low"}, "time": "critical"},
    )
    runner = ActionRunner(db=None, port=None, timers=None, policy=PolicySettings(), tools=catalog)  # type: ignore[arg-type]
    assert runner.risk("publish_post") is Risk.HIGH  # medium, raised: "publish" is sensitive
    assert runner.risk("remember") is Risk.LOW
    assert runner.risk("notes.write_note") is Risk.LOW  # config's per-tool level
    assert runner.risk("notes.read_note") is Risk.LOW  # read-only in config
    assert runner.risk("notes.delete_note") is Risk.HIGH  # "delete" is sensitive, and not read-only
    assert runner.risk("time.get_current_time") is Risk.CRITICAL  # the server's one level


def _verdict(risk: Risk, mode: ApprovalMode, ceiling: Risk | None, **extra: object) -> Verdict:
    return verdict(
        "publish_post",
        mode=mode,
        actions_in_turn=1,
        trust=Trust.NOVICE,
        settings=PolicySettings(auto_approve_risk=ceiling, **extra),  # type: ignore[arg-type]
        risk=risk,
    ).verdict


@pytest.mark.parametrize(
    ("risk", "ceiling", "expected"),
    [
        (Risk.LOW, None, Verdict.WAIT),  # off by default
        (Risk.LOW, Risk.LOW, Verdict.RUN),
        (Risk.MEDIUM, Risk.LOW, Verdict.WAIT),
        (Risk.HIGH, Risk.MEDIUM, Verdict.WAIT),
        (Risk.HIGH, Risk.HIGH, Verdict.RUN),
        (Risk.CRITICAL, Risk.HIGH, Verdict.WAIT),
    ],
)
def test_auto_approve_risk_runs_calls_at_or_below_it_in_the_loop(
    risk: Risk, ceiling: Risk | None, expected: Verdict
) -> None:
    assert _verdict(risk, ApprovalMode.IN_THE_LOOP, ceiling) is expected


def test_auto_approve_risk_never_changes_in_command_nor_the_always_wait_triggers() -> None:
    assert _verdict(Risk.LOW, ApprovalMode.IN_COMMAND, Risk.CRITICAL) is Verdict.WAIT
    assert _verdict(Risk.LOW, ApprovalMode.ON_THE_LOOP, Risk.CRITICAL) is Verdict.ANNOUNCE
    over = verdict(
        "publish_post",
        mode=ApprovalMode.IN_THE_LOOP,
        actions_in_turn=1,
        trust=Trust.NOVICE,
        settings=PolicySettings(auto_approve_risk=Risk.LOW, max_cost=1.0),
        cost=2.0,
        risk=Risk.LOW,
    )
    assert over.verdict is Verdict.WAIT and "max_cost" in over.reason


def test_an_mcp_tool_at_or_below_the_ceiling_runs_without_being_read_only() -> None:
    decision = verdict(
        "notes.write_note",
        mode=ApprovalMode.IN_THE_LOOP,
        actions_in_turn=1,
        trust=Trust.NOVICE,
        settings=PolicySettings(auto_approve_risk=Risk.LOW),
        tool=ToolStanding(read_only=False),
        risk=Risk.LOW,
    )
    assert decision.verdict is Verdict.RUN
