"""Trust levels from the audit log."""

from graph.policy import Trust
from graph.trust import DAY, trust_record
from storage.records import AuditEvent

NOW = 1_000 * DAY


def decided(n: int, event: str, *, start_day: float, detail: str = "") -> list[AuditEvent]:
    return [
        AuditEvent(i, NOW - start_day * DAY + i, "c", "nova", i, "publish_post", event, "you", detail) for i in range(n)
    ]


def test_novice_until_fifty_tasks_ninety_percent_and_seven_days():
    assert trust_record(decided(49, "approved", start_day=8), NOW).level is Trust.NOVICE
    assert trust_record(decided(50, "approved", start_day=8), NOW).level is Trust.PROFICIENT
    assert trust_record(decided(50, "approved", start_day=6), NOW).level is Trust.NOVICE
    mostly = decided(45, "approved", start_day=8) + decided(6, "rejected", start_day=7)
    assert trust_record(mostly, NOW).level is Trust.NOVICE  # 45/51 = 88 %


def test_expert_after_two_hundred_tasks_ninety_eight_percent_and_thirty_days():
    record = trust_record(decided(200, "approved", start_day=31), NOW)
    assert record.level is Trust.EXPERT and record.tasks == 200 and record.approval_rate == 1.0
    assert trust_record(decided(200, "approved", start_day=29), NOW).level is Trust.PROFICIENT


def test_an_incident_drops_the_persona_to_novice():
    history = decided(250, "approved", start_day=40) + decided(
        1, "rejected", start_day=1, detail="incident: leaked a draft"
    )
    record = trust_record(history, NOW)
    assert record.level is Trust.NOVICE and record.tasks == 0
