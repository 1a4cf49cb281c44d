"""Constants that tune the dream cycle (memory_pipeline/dream/)."""

# --- dream cycle (memory_pipeline/dream/) ---------------------------------------------------
# Explorer bounds: every strategy returns at most DREAM_SLICES_PER_STRATEGY slices of at most
# DREAM_SLICE_MAX_MEMORIES memories each, a run at most DREAM_SLICES_PER_RUN slices (strategies
# take turns), and similarity strategies compare the DREAM_SIMILARITY_POOL newest memories only.
DREAM_SLICES_PER_STRATEGY = 5
DREAM_SLICE_MAX_MEMORIES = 8
DREAM_SLICES_PER_RUN = 40
DREAM_SIMILARITY_POOL = 600
# Cosine in the serving space above which two memories of different projects "collide".
DREAM_COLLISION_MIN_COSINE = 0.55
# A recurring question: two memories of different tasks this similar that both answer questions.
DREAM_RECURRING_MIN_COSINE = 0.6
# Correction episodes this similar share a theme; a pattern needs DREAM_CORRECTION_MIN_EPISODES.
DREAM_CORRECTION_THEME_MIN_COSINE = 0.45
DREAM_CORRECTION_MIN_EPISODES = 3
# A decision is "old" when this many days older than the newest memory (decision revisit).
DREAM_REVISIT_MIN_AGE_DAYS = 14
DREAM_REVISIT_MIN_COSINE = 0.5
# Stale priority: a priority or decision not retrieved for this many days.
DREAM_STALE_DAYS = 30
# A project is active when it has a memory this recent (days before the newest memory).
DREAM_ACTIVE_PROJECT_DAYS = 30
# Temporal juxtaposition: memories of different projects created within this many hours.
DREAM_JUXTAPOSITION_HOURS = 24
# Offline Thinker: a connection between memories of different projects needs this cosine; the
# Skeptic defers one between DREAM_CONNECTION_DEFER_COSINE and it, and rejects below.
DREAM_CONNECTION_MIN_COSINE = 0.6
DREAM_CONNECTION_DEFER_COSINE = 0.5
# Precheck: a candidate whose vector is this close to an existing memory restates it.
DREAM_RESTATE_MIN_COSINE = 0.97
# Consensus: accepted with at least this many accepts of four.
DREAM_ACCEPT_VOTES = 3
# A candidate deferred this many times is rejected for good.
DREAM_MAX_DEFERRALS = 2
# Feedback: rejection reasons of the last N runs and user rejections of the last N days.
DREAM_FEEDBACK_RUNS = 5
DREAM_FEEDBACK_DAYS = 30
DREAM_FEEDBACK_MAX_ITEMS = 20
# Ollama backend: calls per run (MEMORY_DREAM_CALL_BUDGET), temperature, context window,
# characters of each memory shown to the model.
DREAM_CALL_BUDGET = 200
DREAM_OLLAMA_TEMPERATURE = 0.0
DREAM_OLLAMA_NUM_CTX = 16384
DREAM_OLLAMA_MEMORY_CHARS = 1200
# A post_learn run is requested once this many new memories arrived since the last run
# (MEMORY_DREAM_POST_LEARN); the sensor looks at most this often.
DREAM_POST_LEARN_MEMORIES = 50
DREAM_SENSOR_INTERVAL_S = 300
# Quotes in dream memories are cut to this many characters each.
DREAM_QUOTE_CHARS = 400
