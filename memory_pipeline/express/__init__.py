"""Express: the daily briefing that comes to the user (issue 16).

compose (what happened) -> edit (rank, headlines) -> feedback (mutes, re-rank) -> store -> push.
Delivery only: nothing here changes a memory or what the dream cycle synthesizes.
"""
