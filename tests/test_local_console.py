"""`make run`'s path with no keys: the console on the default embedded model (Qwen2.5-Coder-1.5B-Instruct)
end to end; the small Gemma 3 270M where a test needs only *a* model."""

from pathlib import Path

from tests.conftest import EMBEDDED_DEFAULT, EMBEDDED_GEMMA, console_process, run_console, write_config

SCRIPT = "Hello Nova, what should we launch next?\n/moderate on 2\nLet's plan the launch party.\n"


def had_her_turn(line: str) -> bool:
    """Nova answered the line, or the review found nothing usable in what the model wrote, twice, and
    her turn was skipped with a notice: either way the line was not left unanswered."""
    return line.startswith("[Nova] ") or line.startswith("[system] Nova could not answer (")


def test_console_replies_on_the_default_model_and_the_moderated_round_ends(tmp_path: Path):
    config = write_config(
        tmp_path,
        {
            "llm": {"provider": "auto"},  # no keys in the environment: auto means the embedded model
            "llm.local": EMBEDDED_DEFAULT,  # no model set: the default
        },
    )
    transcript = run_console(config, SCRIPT, "--verbose", timeout=600)
    lines = transcript.splitlines()
    assert "embedded Qwen2.5-Coder-1.5B-Instruct" in lines[0]
    first_reply = lines[lines.index("[you] Hello Nova, what should we launch next?") + 1]
    assert first_reply.startswith("[Nova] ") and len(first_reply) > len("[Nova] ") + 3
    assert "Picture the bigger version" not in transcript  # a real model, not the scripted double
    moderated = lines[lines.index("[you] Let's plan the launch party.") + 1 :]
    decisions = [line for line in moderated if line.startswith("[moderator] next:")]
    replies = [line for line in moderated if not line.startswith("[moderator]")]
    assert 1 <= len(replies) <= 2  # max_turns 2, or FINISH sooner
    assert len(decisions) in (len(replies), len(replies) + 1)
    assert not any("fallback" in line for line in decisions)  # every decision parsed and was valid


def test_gemma_proposes_an_action_when_asked_and_never_on_chit_chat(tmp_path: Path):
    """The embedded model's own action format (constrained JSON) through the console: the request
    becomes an approval, /approve runs it once, Nova hears the result; chit-chat proposes nothing."""
    config = write_config(
        tmp_path,
        {
            "llm": {"provider": "local"},
            "llm.local": EMBEDDED_GEMMA,
        },
    )
    script = "Nova, publish 'Doors open at 9' in #news\n/approve 1\nNova, how was your weekend?\n"
    lines = run_console(config, script, timeout=300).splitlines()
    asked = lines.index("[you] Nova, publish 'Doors open at 9' in #news")
    assert lines[asked + 1].startswith("[approval 1] Nova wants publish_post(channel='news', text='Doors open at 9')")
    approved = lines.index("[you] /approve 1")
    assert lines[approved + 1 : approved + 4] == [
        "[system] Approved #1.",
        "[Nova in #news] Doors open at 9",
        "[action 1] executed: posted in #news",
    ]
    chit_chat = lines[lines.index("[you] Nova, how was your weekend?") + 1 :]
    assert chit_chat and had_her_turn(chit_chat[0])  # what she says is the model's to choose
    assert not any(line.startswith("[approval") for line in chit_chat)
    assert sum(line.startswith("[Nova in #news]") for line in lines) == 1


def test_a_long_conversation_on_the_embedded_model_never_sends_a_prompt_past_its_context(tmp_path: Path):
    """[history] token_budget (3000 by default) is more than a 512-token window holds: the prompt is
    built within the window less the reply, so llama.cpp refuses none (each refusal is a wasted
    request, cut and sent again, and an error in the log) and every line is answered."""
    config = write_config(
        tmp_path, {"llm": {"provider": "local"}, "llm.local": {**EMBEDDED_GEMMA, "context_size": 512}}
    )
    said = [
        f"Nova, note {n} for the harbour festival: lanterns, ribbons, a stage by the pier and volunteers "
        "for the morning shift, please keep it in mind."
        for n in range(5)
    ]
    finished = console_process(config, "\n".join(said) + "\n", timeout=300)
    lines = finished.stdout.splitlines()
    for line in said:
        assert had_her_turn(lines[lines.index(f"[you] {line}") + 1])
    assert finished.stderr == ""  # nothing refused, nothing failed: the log has nothing to say
