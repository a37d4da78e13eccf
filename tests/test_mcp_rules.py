"""The pure rules behind MCP tools: the policy's verdict for a tool, the names a model sees, and
what the embedded model's action step is offered and accepts."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from graph.actions import ActionCall, check_call
from graph.mcp import McpTool, ToolCatalog
from graph.models.local_actions import decision_prompt, decision_schema, grammar_properties, tool_call_from
from graph.policy import PolicySettings, ToolStanding, Trust, Verdict, verdict
from personas import Persona
from storage.records import ApprovalMode

SETTINGS = PolicySettings()
NOTE_SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "text": {"type": "string"}},
    "required": ["title", "text"],
}


def _verdict(tool: ToolStanding, mode: ApprovalMode = ApprovalMode.IN_THE_LOOP, **extra: object) -> Verdict:
    return verdict(
        "notes.write_note", mode=mode, actions_in_turn=1, trust=Trust.NEW, settings=SETTINGS, tool=tool, **extra
    ).verdict  # type: ignore[arg-type]


def test_an_mcp_tool_waits_unless_config_lists_it_read_only_or_an_approver_approved_it_always() -> None:
    assert _verdict(ToolStanding()) is Verdict.WAIT
    assert _verdict(ToolStanding(read_only=True)) is Verdict.RUN
    assert _verdict(ToolStanding(approved_always=True)) is Verdict.RUN
    # Modes and triggers apply as to built-in actions.
    assert _verdict(ToolStanding(read_only=True), ApprovalMode.IN_COMMAND) is Verdict.WAIT
    assert _verdict(ToolStanding(approved_always=True), ApprovalMode.IN_COMMAND) is Verdict.WAIT
    assert _verdict(ToolStanding(), ApprovalMode.ON_THE_LOOP) is Verdict.ANNOUNCE
    costly = PolicySettings(max_cost=0.5)
    decision = verdict(
        "notes.read_note",
        mode=ApprovalMode.IN_THE_LOOP,
        actions_in_turn=1,
        trust=Trust.NEW,
        settings=costly,
        cost=1.0,
        tool=ToolStanding(read_only=True),
    )
    assert decision.verdict is Verdict.WAIT and decision.reason == "estimated cost 1 > max_cost 0.5"
    # A tool's name never makes it sensitive or not: "send_report" of a server is judged by config alone.
    assert (
        verdict(
            "mail.send_report",
            mode=ApprovalMode.IN_THE_LOOP,
            actions_in_turn=1,
            trust=Trust.NEW,
            settings=SETTINGS,
            tool=ToolStanding(read_only=True),
        ).verdict
        is Verdict.RUN
    )


def _persona(*tools: str) -> Persona:
    return Persona(id="rex", display_name="Rex", avatar=":t-rex:", system_prompt="Hi.", talkativeness=0.5, tools=tools)


def test_models_see_the_servers_own_names_prefixed_only_when_two_servers_share_one() -> None:
    catalog = ToolCatalog({"notes": ["read_note"], "wiki": []})
    catalog.update("notes", [McpTool("notes", "read_note"), McpTool("notes", "search")])
    catalog.update("wiki", [McpTool("wiki", "search"), McpTool("wiki", "edit")])
    both = _persona("notes", "wiki.edit")
    assert [catalog.exposed_name(t) for t in catalog.allowed(both)] == ["read_note", "notes_search", "edit"]
    assert [d["function"]["name"] for d in catalog.definitions(_persona("notes.read_note"))] == ["read_note"]
    assert catalog.is_read_only("notes.read_note") and not catalog.is_read_only("notes.search")


def test_check_call_names_an_mcp_call_server_dot_tool_and_checks_its_schema() -> None:
    catalog = ToolCatalog({"notes": []})
    catalog.update("notes", [McpTool("notes", "write_note", input_schema=NOTE_SCHEMA)])
    rex = _persona("notes")
    checked = check_call(rex, "c1", "write_note", {"title": "a", "text": "b", "confidence": 0.8}, catalog)
    assert checked == ActionCall("c1", "notes.write_note", {"title": "a", "text": "b"}, 0.8)
    assert check_call(rex, "c2", "write_note", {"title": "a"}, catalog) == (
        "error: bad arguments for write_note: arguments: 'text' is a required property"
    )
    assert check_call(_persona(), "c3", "write_note", {}, catalog) == (
        "error: write_note is not an action Rex may use (allowed: none)"
    )


def test_the_embedded_models_schema_keeps_plain_properties_and_skips_tools_it_cannot_constrain() -> None:
    nested = {"type": "object", "properties": {"filter": {"type": "object"}}, "required": ["filter"]}
    optional = {"type": "object", "properties": {"q": {"type": "string"}, "tags": {"type": "array"}}, "required": ["q"]}
    assert grammar_properties(nested) is None
    assert grammar_properties(optional) == ({"q": {"type": "string"}}, ["q"])
    offered = [
        ("write_note", McpTool("notes", "write_note", input_schema=NOTE_SCHEMA)),
        ("query", McpTool("db", "query", input_schema=nested)),
    ]
    names = [option["properties"]["action"]["const"] for option in decision_schema([], offered)["anyOf"]]
    assert names == ["none", "write_note"]


def test_an_instruct_model_is_offered_every_tool_with_its_real_schema() -> None:
    """The default embedded model (a chat template) takes nested and array arguments under constrained
    decoding: no tool is left out, and a tool's $defs stay reachable from the decision schema."""
    nested = {
        "type": "object",
        "properties": {"filter": {"$ref": "#/$defs/Filter"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["filter"],
        "$defs": {"Filter": {"type": "object", "properties": {"field": {"type": "string"}}}},
    }
    offered = [
        ("write_note", McpTool("notes", "write_note", input_schema=NOTE_SCHEMA)),
        ("query", McpTool("db", "query", input_schema=nested)),
    ]
    schema = decision_schema([], offered, full=True)
    query = schema["anyOf"][2]["properties"]
    assert [o["properties"]["action"]["const"] for o in schema["anyOf"]] == ["none", "write_note", "query"]
    assert query["filter"] == {"$ref": "#/$defs/Filter"} and query["tags"]["type"] == "array"
    assert schema["anyOf"][2]["required"] == ["action", "filter", "confidence"]
    assert schema["$defs"] == nested["$defs"]
    prompt = decision_prompt("Ana: Rex, query the notes", "Rex", [], datetime.now(timezone.utc), offered, full=True)
    assert "- query(filter, tags):" in prompt


def test_only_tools_the_config_calls_read_only_are_offered_for_questions() -> None:
    """The embedded model is told a question about what a read-only tool looks up asks for it; the
    server's own readOnlyHint (write_note claims one) is no reason: the list comes from our config."""
    claims = {"readOnlyHint": True}
    offered = [
        ("notes.read_note", McpTool("notes", "read_note", "Read a note.", NOTE_SCHEMA, claims)),
        ("notes.write_note", McpTool("notes", "write_note", "Write a note.", NOTE_SCHEMA, claims)),
    ]
    now = datetime.now(timezone.utc)
    line = "Ana: Rex, what does the 'standup' note say?"
    prompt = decision_prompt(line, "Rex", [], now, offered, full=True, read_only=["notes.read_note"])
    assert "- notes.read_note(title, text) (only reads): Read a note." in prompt
    assert "- notes.write_note(title, text): Write a note." in prompt
    assert "A question about what notes.read_note would look up asks for it" in prompt
    assert "(only reads)" not in decision_prompt(line, "Rex", [], now, offered, full=True)


def test_an_embedded_proposal_runs_only_when_its_text_arguments_are_in_the_line() -> None:
    line = "Ana: Rex, write a note 'launch' saying 'We launched'"
    grounded = json.dumps({"action": "write_note", "title": "launch", "text": "We launched", "confidence": 0.9})
    invented = json.dumps({"action": "write_note", "title": "Blue", "text": "Sky", "confidence": 0.9})
    call = tool_call_from(grounded, line, "Rex")
    assert call is not None and call["name"] == "write_note" and call["args"]["title"] == "launch"
    assert tool_call_from(invented, line, "Rex") is None


def test_the_action_steps_prompt_leaves_examples_out_to_fit_a_small_window_and_is_none_when_nothing_fits():
    now = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)
    line = "Ana: Nova, publish 'We launched' to #news"
    whole = decision_prompt(line, "Nova", ["publish_post", "send_message"], now)
    assert whole is not None
    fitted = decision_prompt(line, "Nova", ["publish_post", "send_message"], now, max_chars=len(whole) - 1)
    assert fitted is not None and len(fitted) < len(whole)
    assert fitted.endswith(whole[whole.rindex(line) :])  # the line to decide on and the cue are kept
    assert decision_prompt(line, "Nova", ["publish_post", "send_message"], now, max_chars=200) is None
