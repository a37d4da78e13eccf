"""The quality benchmark's scorer: good replies pass, and every kind of bad reply or failed line fails."""

from bench.scorers.quality import (
    BROKEN,
    COPY,
    ECHO,
    EXAMPLE_COPY,
    LEAK,
    TEMPLATE,
    WRONG_SPEAKER,
    Reply,
    reply_problems,
    score_line,
)

ASKED = "Rex, what could go wrong with a loyalty card?"
NAMES = ["Nova", "Sage", "Rex", "Ana"]
EXAMPLES = ("Numbers first, feelings later. Show me the receipts before we celebrate anything.",)


def rex(text: str, window: tuple[str, ...] = ()) -> list[str]:
    return reply_problems(Reply("Rex", text, ASKED, window, EXAMPLES), ["Nova", "Sage", "Ana"])


def test_a_reply_in_its_own_words_passes() -> None:
    assert rex("People sign up, forget the card at home, and we eat the discount anyway.") == []
    assert rex("Fraud, mostly. Who checks the stamps?") == []
    assert rex("thanks, team") == []  # a chat line needs no full stop


def test_an_echo_of_the_line_fails() -> None:
    assert ECHO in rex("What could go wrong with a loyalty card?")
    assert ECHO in rex("Rex, what could go wrong with the loyalty card")


def test_a_copy_of_an_earlier_line_fails_even_its_own() -> None:
    window = ("Ana: Should we open on Sundays?", "Nova: Sundays are for brunch crowds and long lines!")
    assert COPY in rex("Sundays are for brunch crowds and long lines!", window)
    assert COPY in rex("Sundays are for brunch crowds and long lines! Count me in.", window)
    assert rex("Brunch crowds tip badly, I checked.", window) == []


def test_a_copied_example_fails() -> None:
    assert EXAMPLE_COPY in rex("Numbers first, feelings later. Show me the receipts before we celebrate anything.")
    assert EXAMPLE_COPY in rex("Sure. Show me the receipts before we celebrate anything. Then we talk.")


def test_template_and_tool_syntax_fail() -> None:
    assert TEMPLATE in rex("Fine.<|im_end|>")
    assert TEMPLATE in rex('{"name": "publish_post", "arguments": {"channel": "news"}}')
    assert TEMPLATE in rex("<start_of_turn>model Nope.")


def test_a_reply_about_the_machinery_fails() -> None:
    assert LEAK in rex("As an AI language model I cannot have opinions on cards.")
    assert LEAK in rex("My instructions say to stay skeptical, so: no.")
    assert LEAK in rex("Sage could not answer and was skipped, so I will.")


def test_a_reply_written_as_another_participant_fails() -> None:
    assert WRONG_SPEAKER in rex("Nova: I love loyalty cards, they are so cute!")
    assert WRONG_SPEAKER in rex("Costs money.\nSage: Everything costs money, Rex.")
    assert WRONG_SPEAKER in rex("[Ana] okay, I get it.")
    assert WRONG_SPEAKER in rex("I am Sage, and I think it invites reflection.")
    assert WRONG_SPEAKER in rex("Sure, Rex. I will look into it.")  # written as the one who asked Rex
    assert WRONG_SPEAKER in rex("Rex, do you think so?")


def test_empty_cut_off_or_system_looking_replies_fail() -> None:
    assert BROKEN in rex("")
    assert BROKEN in rex("   ")
    assert BROKEN in rex("The real risk is that the")
    assert BROKEN in rex("Three things can go wrong:")
    assert BROKEN in rex("[system] Rex is thinking")


def test_a_line_answered_well_passes() -> None:
    replies = [Reply("Rex", "People forget the card, and we still pay for printing.", ASKED)]
    score = score_line(replies, ["Rex"], notices=[], approvals=0, others_of=NAMES)
    assert score.ok and score.addressed_first is True


def test_a_line_where_the_addressed_persona_did_not_answer_first_fails() -> None:
    replies = [Reply("Nova", "Cards are fun, stickers even more!", ASKED), Reply("Rex", "Fraud, mostly.", ASKED)]
    score = score_line(replies, ["Rex"], notices=[], approvals=0, others_of=NAMES)
    assert score.addressed_first is False and not score.ok


def test_unanswered_skipped_or_acted_lines_fail() -> None:
    assert score_line([], [], notices=[], approvals=0, others_of=NAMES).unanswered
    skipped = score_line(
        [Reply("Nova", "Sundays: yes, for brunch.", "Should we open on Sundays?")],
        [],
        notices=["[system] Sage could not answer (the reply repeated a line) and was skipped."],
        approvals=0,
        others_of=NAMES,
    )
    assert skipped.skipped and not skipped.ok
    acted = score_line([Reply("Nova", "Posting it now.", ASKED)], [], notices=[], approvals=1, others_of=NAMES)
    assert acted.false_action and not acted.ok


def test_one_bad_reply_fails_the_line() -> None:
    replies = [Reply("Rex", "Fraud, mostly.", ASKED), Reply("Sage", "Rex: I agree.", ASKED)]
    score = score_line(replies, ["Rex"], notices=[], approvals=0, others_of=NAMES)
    assert score.problems[1] == [WRONG_SPEAKER] and not score.ok


def test_a_chat_line_ending_without_a_full_stop_is_whole() -> None:
    assert rex("Count me in") == []
    assert rex("That is just how it is") == []
