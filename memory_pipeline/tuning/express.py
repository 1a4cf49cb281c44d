"""Constants that tune express: the daily briefing (memory_pipeline/express/)."""

# --- express: the daily briefing (memory_pipeline/express/) --------------------------------
# The first briefing looks back this many days; later ones cover what happened since the last.
EXPRESS_FIRST_WINDOW_DAYS = 7
# A briefing shows at most this many items (after mutes and the feedback re-rank).
EXPRESS_MAX_ITEMS = 10
# Resurfacing: an active memory at least this deep (depth_score, 0-1) that nobody has read
# (last_accessed_at, else created_at) for this many days; at most EXPRESS_RESURFACE_MAX a day, and
# a memory resurfaced once waits EXPRESS_RESURFACE_COOLDOWN_DAYS before it can come back.
EXPRESS_RESURFACE_MIN_DEPTH = 0.7
EXPRESS_RESURFACE_MIN_AGE_DAYS = 60
EXPRESS_RESURFACE_MAX = 3
EXPRESS_RESURFACE_COOLDOWN_DAYS = 90
# The weekly digest (on MEMORY_BRIEF_DIGEST_WEEKDAY) covers this many days and names the deepest
# EXPRESS_DIGEST_TOP memories of them.
EXPRESS_DIGEST_DAYS = 7
EXPRESS_DIGEST_TOP = 5
# The offline editor's order: each kind's base score (a higher one comes first), plus
# EXPRESS_CROSS_PROJECT_BONUS for a synthesis across projects and EXPRESS_DEPTH_WEIGHT * depth.
EXPRESS_KIND_SCORES = {
    "contradiction": 1.0,
    "synthesis": 0.8,
    "superseded": 0.7,
    "question": 0.6,
    "digest": 0.5,
    "resurfaced": 0.4,
    "source": 0.45,  # a new inbox document that bears on an agent memory (issue 33)
}
EXPRESS_CROSS_PROJECT_BONUS = 0.3
EXPRESS_DEPTH_WEIGHT = 0.1
# Feedback re-rank: each `useful` on an item adds these to later items of its topic and of its
# kind (`less` subtracts them); the total shift of one item is capped at EXPRESS_FEEDBACK_MAX_SHIFT.
EXPRESS_FEEDBACK_TOPIC_WEIGHT = 0.3
EXPRESS_FEEDBACK_KIND_WEIGHT = 0.1
EXPRESS_FEEDBACK_MAX_SHIFT = 0.6
# Headlines longer than this are cut to their first sentence (or at a word, marked with "…").
EXPRESS_HEADLINE_MAX_CHARS = 120
# Ollama editor: one chat call per briefing; memory text shown to it is cut at this length.
EXPRESS_OLLAMA_MAX_MEMORY_CHARS = 400
EXPRESS_OLLAMA_TEMPERATURE = 0.0
# SMTP: a push gives up on a server that does not answer within this many seconds.
EXPRESS_SMTP_TIMEOUT_S = 30.0
