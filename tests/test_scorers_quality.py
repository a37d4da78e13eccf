"""The quality benchmark's scorer: good replies pass, and every kind of bad reply or failed line fails."""

from bench.scorers.quality import (
    BROKEN,
    COPY,
    ECHO,
    EXAMPLE_COPY,
    LEAK,
    RESTATES,
    ROLE_TALK,
    TEMPLATE,
    UNSAID,
    WRONG_ADDRESSEE,
    WRONG_SPEAKER,
    Reply,
    machinery_notice,
    new_check_problems,
    reply_problems,
    restates,
    role_talk,
    score_line,
    unsaid_line,
    wrong_addressee,
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


# The four checks of issue #55 ("Replies worth reading"), on the replies that made it and on fair ones.

SELL = "Nova, sell me on the designer."


def nova(text: str, answered: str = SELL, window: tuple[str, ...] = (), spoke: tuple[str, ...] = ()) -> list[str]:
    reply = Reply("Nova", text, answered, window, asker="Ana")
    return reply_problems(reply, ["Sage", "Rex", "Ana"], spoke)


def test_a_reply_opening_on_someone_other_than_the_asker_fails() -> None:
    assert WRONG_ADDRESSEE in nova("Sage, if we consider the budget, a designer pays for herself in a quarter.")
    assert WRONG_ADDRESSEE in nova("Hey Sage, what would you pay a designer?")
    assert WRONG_ADDRESSEE in nova("@Rex you always say no, but a designer is worth it.")
    assert WRONG_ADDRESSEE in nova("Well, Rex — a designer makes the app feel finished.")
    assert wrong_addressee("Sage, if we consider the budget...", "Ana", "Nova", ["Sage", "Rex", "Ana"]) == "Sage"


def test_a_reply_to_the_asker_or_naming_someone_in_passing_is_no_wrong_addressee() -> None:
    assert nova("Ana, a designer makes the first screen sell the app for us.") == []
    assert nova("Hey Ana! A designer turns the demo into something people share.") == []
    assert nova("A designer pays off fast. Sage would say the same.") == []
    assert nova("Sage's budget worry is fair, but a designer pays off fast.") == []
    assert nova("Sage is right about the budget, and a designer still pays off.") == []
    # Answering a persona who spoke before it in the round takes up that persona's line.
    assert nova("Rex, a designer is cheaper than a redesign later.", spoke=("Rex",)) == []
    # No person's line, no asker to get wrong; its own name is the wrong speaker's check.
    bare = Reply("Nova", "Sage, a designer pays off.", SELL)
    assert WRONG_ADDRESSEE not in reply_problems(bare, ["Sage", "Rex", "Ana"])
    assert WRONG_ADDRESSEE not in nova("Nova, I think so.")


LAUNCH = "Hi all, we're thinking of launching our budgeting app next Tuesday. Thoughts?"


def test_a_reply_that_says_the_line_back_fails() -> None:
    said_back = "Hi all! We're looking at launching our budgeting app next Tuesday. What do you think?"
    assert ECHO not in nova(said_back, LAUNCH)  # the echo check's similarity misses it
    assert RESTATES in nova(said_back, LAUNCH)
    assert RESTATES in nova("Yes! Launching our budgeting app next Tuesday sounds perfect to me.", LAUNCH)
    assert RESTATES in nova("So we launch the budgeting app next Tuesday?", LAUNCH)
    assert restates(
        "Nova, sell me on the designer role? Sell you on the designer role!", "Nova, sell me on the designer role."
    )


def test_a_fair_answer_quoting_a_word_or_two_of_the_line_is_no_restatement() -> None:
    assert nova("Tuesday works, but test the budgeting export first.", LAUNCH) == []
    assert nova("Launch Tuesday.", LAUNCH) == []
    long = "A Tuesday launch is fine, but the budgeting app needs its export fixed first, or support drowns."
    assert nova(long, LAUNCH) == []
    assert nova("Mondays are quieter for support, so ship Monday and watch the numbers.", LAUNCH) == []


def test_a_reply_to_a_line_nobody_said_fails() -> None:
    note = "Sorry, but I'm not sure what you mean by \"Sage's last draft was not posted\"."
    assert UNSAID in nova(note)
    assert UNSAID in nova("You keep saying \u201cship it before the holidays\u201d, but nobody agreed.")
    assert UNSAID in nova("Okay, my reply was not posted, so here it is: hire the designer.")
    assert UNSAID in nova("It's your turn now, and I say hire.")
    assert UNSAID in nova("Fine, I will write it again: a designer pays off.")
    assert unsaid_line('What do you mean by "the review rejected it"?', SELL) == "the review rejected it"
    assert UNSAID in nova('"Sage\'s draft was withheld" - I am not sure what that means.')


def test_quoting_a_line_that_was_said_or_a_short_phrase_is_no_unsaid_line() -> None:
    window = ("Ana: Should we hire at all?", "Sage: The budget is tight this quarter.")
    assert nova('Sage says "the budget is tight", but a designer pays for herself.', window=window) == []
    assert nova('You asked me to "sell you on the designer", so: she makes the app feel finished.') == []
    assert nova('Call it a "soft launch" and hire the designer after.') == []
    # A name or a title the reply puts forward in quotes is its own words (the before run's podcast names).
    podcast = "Nova, give me a name for it that isn't a pun."
    assert nova('Let\'s name it "Podcasting Unveiled: Exploring the Future of Podcasts".', podcast) == []
    assert nova('Podcastology: "The Future of Podcasting: How to Create an Unforgettable Podcast"', podcast) == []
    assert nova('It\'s not "a real plan" yet, but it is close.') == []
    assert nova("I'm not sure what you mean, Ana. Which designer?") == []
    # The review's words are fair when someone in the chat said them.
    posted = ("Ana: The job ad was not posted yet, by the way.",)
    assert nova("Then post it once the designer brief is done; not posted is fine for now.", window=posted) == []


def test_a_reply_about_its_own_role_fails() -> None:
    assert ROLE_TALK in nova("I'm sorry, but as a skeptic, I'm not convinced.")
    assert ROLE_TALK in nova("As a philosopher, I wonder what a designer is for.")
    assert ROLE_TALK in nova("Speaking as the team's devil's advocate: skip the designer.")
    assert ROLE_TALK in nova("In my role as the optimist, I say hire.")
    assert ROLE_TALK in nova("As your visionary, I see a designer in every launch.")
    assert ROLE_TALK in nova("As an eternal optimist, I say yes.")
    assert ROLE_TALK in nova("As a designer myself, I'd hire one.")
    assert role_talk("That's not my call as the moderator, I just keep time.") is not None


def test_as_in_other_senses_is_no_role_talk() -> None:
    assert nova("As a team we should hire the designer before the launch.") == []
    assert nova("Hire the designer as soon as the budget clears.") == []
    assert nova("We could hire her as a designer and train her on research.") == []
    assert nova("Skills such as a designer's eye for detail are hard to find.") == []
    assert nova("Treat the portfolio as the interview: it says more than talk.") == []


def test_the_new_checks_are_told_apart_from_the_old_and_from_calm_notices() -> None:
    assert new_check_problems([ROLE_TALK]) and new_check_problems([ECHO, RESTATES])
    assert not new_check_problems([ECHO, COPY, LEAK])
    assert machinery_notice("[system] Sage could not answer (the reply repeated a line) and was skipped.")
    assert machinery_notice("[system] Round stopped: more than half of its turns failed.")
    assert not machinery_notice("[system] Sage has no answer to that right now.")
