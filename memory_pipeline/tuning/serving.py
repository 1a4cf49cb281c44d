"""Constants that tune the serving processes: the MCP server and the hooks."""

# --- serving: the MCP server's connection pool (serving/mcp/pool.py) ---------------------------
# At most MCP_POOL_SIZE tool calls query the database at once (each holds one connection while
# it embeds the query and searches). Further calls wait in line for a connection: at most
# MCP_POOL_MAX_WAITING of them, each at most MCP_POOL_WAIT_S seconds; only then does a call answer
# "busy, try again". 200 concurrent memory_search calls over HTTP all answer with these values
# (scripts/bench_mcp_load.py). Tool calls run in the SDK's worker threads (40), so calls beyond
# 40 wait for a thread before they join this line.
MCP_POOL_SIZE = 8
MCP_POOL_MAX_WAITING = 256
MCP_POOL_WAIT_S = 60.0

# Where memory_search and memory_context run over HTTP: MCP_WORKERS = 0 in threads of the server
# process (at most MCP_POOL_SIZE at once, sharing its connection pool and embedder), N > 0 in N
# worker processes (each with one reader connection and its own embedder; -1: one per core).
# MEMORY_MCP_WORKERS overrides it (`threads`, `cores` or N). Threads measured better on 2 cores:
# the database does about half of each call's CPU, so the GIL is not what limits them, and 8
# calls in flight keep both the server and PostgreSQL busy where 2 workers leave gaps (16
# clients 10.4-11.1 calls/s against 8.5-9.5 with 2 or 4 processes, back to back at load ~20).
# A call that would wait in line longer than MCP_QUEUE_MAX_WAIT_S (calls ahead / the calls that
# can really run at once, min(slots, cores), x the recent seconds a slot was busy per call) is
# answered at once with "busy, retry after N s".
MCP_WORKERS = 0
# Streamable HTTP answers each request with one JSON body (True) or an SSE stream (False). The
# tools send no progress or log notifications, so JSON costs the server less per call.
MCP_JSON_RESPONSE = True
MCP_QUEUE_MAX_WAIT_S = 10.0
# An idle keep-alive connection is closed by the server after this many seconds: longer than
# clients keep theirs (httpx 5 s, Node 4-5 s), so a client never sends a call on a connection the
# server is closing at that moment (uvicorn's own 5 s did that: "ReadError" under load).
MCP_HTTP_KEEP_ALIVE_S = 65

# MCP over HTTP input (serving/mcp/http_guard.py).
# A request body nested deeper than this (arrays and objects) is answered with a JSON-RPC parse
# error (400) before anything parses it: Python's json module raises RecursionError near 1,000
# levels (a 500) and the SDK's parser stops at about 200. A JSON-RPC call needs 5 or 6.
MCP_JSON_MAX_DEPTH = 64

# --- serving: agent hooks (serving/hooks/) -------------------------------------------------
# Token budgets of what a hook injects (MEMORY_HOOK_SESSION_TOKENS / MEMORY_HOOK_PROMPT_TOKENS
# override them): a session start may carry the repository's recent work, a prompt only the few
# memories that match it, since it is paid again on every prompt.
HOOK_SESSION_TOKENS = 1500
HOOK_PROMPT_TOKENS = 400
# Wall-clock deadlines of the hook command as the agent sees it (whole process); past them it
# prints nothing and exits 0. `memory-pipeline hook prompt --deadline S` overrides them.
HOOK_SESSION_DEADLINE_S = 1.5
HOOK_PROMPT_DEADLINE_S = 0.5
# A session start that finds no hook server running (the first session after a reboot or after
# HOOK_SERVER_IDLE_EXIT_S) starts it and waits this long for its answer instead: the server
# imports its libraries and loads the model first (1.8-2.1 s at load 2-3, longer on a busy
# machine), once per cold start. It stays under the agents' kill timeout (10 s, install.py).
HOOK_SESSION_COLD_DEADLINE_S = 8.0
# Relevance: a packed memory is injected only when the cosine (all-MiniLM-L6-v2, serving space)
# between the prompt and its best quoted passage reaches this; with none reaching it the hook
# prints nothing. Tuned with scripts/bench_hooks.py on the demo and long-conversation gold
# queries against serving/hooks/unrelated_prompts.txt: 0.45 is the lowest value at which none
# of the 77 unrelated prompts injects anything on either corpus (0.40: 1 of 77), while 90% of
# the demo and 87% of the long-conversation gold queries still inject something. A session
# start is not a question, so its query (repository and recent task titles) is judged lower.
HOOK_PROMPT_MIN_COSINE = 0.45
HOOK_SESSION_MIN_COSINE = 0.30
# Prompts longer than this are cut before they become a query (a pasted log is not a question).
HOOK_QUERY_MAX_CHARS = 2000
# The resident hook server (serving/hooks/server.py) exits after this long without a request.
HOOK_SERVER_IDLE_EXIT_S = 4 * 3600
# The hook server answers this many requests at once per process, in HOOK_SERVER_PROCESSES
# forked processes (0: one per core) accepting on the one socket; a server whose socket file is
# gone notices within HOOK_SERVER_SOCKET_CHECK_S and exits; a new server waits this long for the
# home's lock (held by such an orphan) before it leaves the home to the one holding it.
HOOK_SERVER_THREADS = 8
HOOK_SERVER_PROCESSES = 0
HOOK_SERVER_SOCKET_CHECK_S = 0.5
HOOK_SERVER_LOCK_WAIT_S = 3.0
# The hook's one-line failure log (MEMORY_HOME/logs/hooks.log) is rotated past this size.
HOOK_LOG_MAX_BYTES = 1_000_000
