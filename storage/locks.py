"""Names of the locks processes sharing one database take, in one place so none collide."""

SETUP_LOCK = "roundtable:setup"  # creating tables at start-up
TIMERS_CLAIM = "roundtable:timers"  # the one process that fires timers


def channel_lock(channel_key: str) -> str:
    """Held while a channel's round runs."""
    return f"roundtable:channel:{channel_key}"


def inbox_lock(channel_key: str) -> str:
    """Held while a line enters the channel's inbox, so line ids commit in order."""
    return f"roundtable:inbox:{channel_key}"
