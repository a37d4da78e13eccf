"""A request's risk level is one pure decision (graph/risk.py), and [approvals] auto_approve_risk lets
calls at or below it run at once in in-the-loop channels only (graph/policy.py verdict)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from graph.action_runner import ActionRunner
from graph.actions import declared_risk
from graph.mcp import ToolCatalog
from graph.policy import DEFAULT_SENSITIVE, PolicySettings, ToolStanding, Trust, Verdict, is_sensitive, verdict
from graph.risk import Risk, risk_of
from storage.records import ApprovalMode
from tests.conftest import run_console, write_config
from tests.mcp_setup import calls_received, notes_environment, stdio_sections


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
        tool=ToolStanding(read_only=False, own_risk=True),  # [mcp.servers.notes] risk = { write_note = "low" }
        risk=Risk.LOW,
    )
    assert decision.verdict is Verdict.RUN


@pytest.mark.parametrize(
    "name", ["delete_note", "deleteNote", "delete-note", "Delete_note", "DELETE_NOTE", "note.Delete"]
)
def test_a_sensitive_verb_is_found_whatever_its_casing_or_separator(name: str) -> None:
    assert is_sensitive(name, DEFAULT_SENSITIVE)
    assert risk_of(declared=Risk.LOW, sensitive=is_sensitive(name, DEFAULT_SENSITIVE)) is Risk.HIGH


def test_a_configured_name_matches_whatever_its_spelling_and_a_lookalike_word_does_not() -> None:
    assert is_sensitive("archiveAll", ["archive_all"]) and is_sensitive("archive-all", ["ArchiveAll"])
    assert not is_sensitive("read_note", DEFAULT_SENSITIVE)
    assert not is_sensitive("resend_later", DEFAULT_SENSITIVE)  # "resend" is no word of the list


def test_auto_approve_risk_never_runs_a_tool_whose_risk_is_only_its_servers_one_level() -> None:
    catalog = ToolCatalog({"notes": []}, risks={"notes": "low", "todo": {"add_item": "low"}})
    runner = ActionRunner(db=None, port=None, timers=None, policy=PolicySettings(), tools=catalog)  # type: ignore[arg-type]
    assert runner.risk("notes.write_note") is Risk.LOW and not catalog.has_own_risk("notes.write_note")
    assert catalog.has_own_risk("todo.add_item")

    def judged(own_risk: bool) -> Verdict:
        return verdict(
            "notes.write_note",
            mode=ApprovalMode.IN_THE_LOOP,
            actions_in_turn=1,
            trust=Trust.NEW,
            settings=PolicySettings(auto_approve_risk=Risk.LOW),
            tool=ToolStanding(read_only=False, own_risk=own_risk),
            risk=Risk.LOW,
        ).verdict

    assert judged(own_risk=False) is Verdict.WAIT  # the server's one level: it covers tools nobody looked at
    assert judged(own_risk=True) is Verdict.RUN


@pytest.mark.parametrize("spelled", ["deleteNote", "Delete_note"])
def test_a_camel_case_delete_tool_from_a_low_risk_server_waits_for_a_person(tmp_path: Path, spelled: str) -> None:
    """[mcp.servers.notes] risk = "low" and [approvals] auto_approve_risk = "low": the notes server's
    delete tool, offered as `deleteNote` (or `Delete_note`), is asked about, and never runs by itself."""
    with notes_environment(tmp_path) as log:
        os.environ["NOTES_DELETE"] = spelled  # restored by notes_environment
        sections = {**stdio_sections(tmp_path, risk="low"), "approvals": {"auto_approve_risk": "low"}}
        config = write_config(tmp_path, sections)
        out = run_console(config, f'Rex, delete the groceries note. !!act {spelled} {{"title": "groceries"}}\n')
        assert "[approval 1]" in out and f"notes.{spelled}" in out
        assert calls_received(log) == []
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        assert db.execute("SELECT action, status, risk FROM approvals").fetchall() == [
            (f"notes.{spelled}", "pending", "high")
        ]
