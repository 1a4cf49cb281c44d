"""Chat imports: an exported ChatGPT history (two chats) and a design review of two colleagues."""

from __future__ import annotations

from memory_pipeline.demo.spec import ChatTurn, ImportChat, Msg

U = "user"
A = "assistant"
MARA = "Mara"
JONAS = "Jonas"

PG_BACKUPS = ImportChat(
    key="chatgpt-pg-backups",
    task_id="chatgpt-6714e0c2-9b1f-4d0a-8c55-2f3e1a7b9d40",
    file="chatgpt-export-2026-10.jsonl",
    date="2026-09-27",
    project="homelab",
    summary="ChatGPT: pg_dumpall vs physical backups for the home-lab Postgres; pgBackRest "
    "over WAL-G; restore tests. The title is updated mid-chat.",
    turns=(
        ChatTurn(
            prompt=(
                Msg(
                    U,
                    "I run Postgres 16 on a VM in my homelab (gitea, grafana and a few small "
                    "apps, about 40 GB). Right now it's a nightly pg_dumpall to the NAS. Is "
                    "that good enough?",
                    "16:10",
                    title="Postgres backups for the homelab",
                ),
            ),
            outcome=(
                Msg(
                    A,
                    "For 40 GB a nightly pg_dumpall works, but it has two weaknesses: you can "
                    "lose up to 24 hours of data, and a restore means replaying the whole SQL "
                    "dump, which for 40 GB typically takes over an hour. It also holds one long "
                    "transaction per database while it runs, which keeps vacuum from cleaning "
                    "up busy tables. If losing a day of Gitea pushes is acceptable, keep it; "
                    "otherwise use physical backups with WAL archiving, which give you "
                    "point-in-time recovery.",
                    "16:10",
                ),
            ),
        ),
        ChatTurn(
            prompt=(Msg(U, "I'd like point-in-time recovery. pgBackRest or WAL-G?", "16:14"),),
            outcome=(
                Msg(
                    A,
                    "pgBackRest is the better fit here. It does full, differential and "
                    "incremental backups, compresses in parallel with zstd, verifies checksums, "
                    "and can write to your NAS over a plain path or to S3-compatible storage "
                    "such as MinIO. WAL-G is great for cloud setups with many clusters, but it "
                    "is configured mostly through environment variables and its restore tooling "
                    "is less guided. With pgBackRest you'd set `archive_command = 'pgbackrest "
                    "--stanza=main archive-push %p'`, run a weekly full and a daily "
                    "differential backup, and keep two full backups (`repo1-retention-full=2`).",
                    "16:15",
                    title="Homelab Postgres: pgBackRest setup",
                ),
            ),
            gold=("q52",),
            plants=("decision",),
        ),
        ChatTurn(
            prompt=(
                Msg(U, "how do I test a restore without touching the running server?", "16:31"),
            ),
            outcome=(
                Msg(
                    A,
                    "Restore into a separate data directory, on another VM or a scratch "
                    "directory: `pgbackrest --stanza=main --pg1-path=/var/lib/postgresql/"
                    "restore-test restore --type=time --target='2026-09-27 12:00:00+02' "
                    "--target-action=promote`, then start a throwaway instance with `pg_ctl -D "
                    "... -o '-p 5499' start` and run a few sanity queries, such as row counts of "
                    "Gitea's `repository` table and the latest `action` timestamps. Do it "
                    "monthly: a backup you have never restored is only a hope. Delete the test "
                    "directory afterwards, since it is a full copy of your data.",
                    "16:32",
                ),
            ),
            plants=("insight",),
        ),
        ChatTurn(
            prompt=(
                Msg(
                    U,
                    "what WAL retention would you pick with weekly full backups?",
                    "16:40",
                ),
            ),
            outcome=(
                Msg(
                    A,
                    "WAL expires together with the backups that need it: with "
                    "`repo1-retention-full=2`, pgBackRest keeps WAL from the older of the two "
                    "full backups onward, so you can recover to any point in the last one to two "
                    "weeks. You don't need a separate WAL retention setting. At your write "
                    "volume that is probably 5 to 10 GB of compressed WAL per week; check with "
                    "`pgbackrest info` after the first week.",
                    "16:41",
                ),
            ),
        ),
    ),
)

RATE_LIMIT_ALGORITHMS = ImportChat(
    key="chatgpt-rate-limit-algorithms",
    task_id="chatgpt-7a02c9d1-51e3-4b6f-9a0d-c4e8f2b61a77",
    file="chatgpt-export-2026-10.jsonl",
    date="2026-10-18",
    timestamps="utc-naive",
    project="ledgerline",
    summary="ChatGPT, the day before the design review: rate limiting algorithms and keeping "
    "limiter state in Postgres. Timestamps are naive UTC.",
    turns=(
        ChatTurn(
            prompt=(
                Msg(
                    U,
                    "explain token bucket vs sliding window log vs fixed window rate limiting, "
                    "with the tradeoffs. I'm about to rewrite a limiter",
                    "11:00",
                    title="Rate limiting algorithms",
                ),
            ),
            outcome=(
                Msg(
                    A,
                    "A fixed window counts requests per calendar interval, e.g. per minute: one "
                    "counter per key, but up to twice the limit can get through around a window "
                    "boundary. A sliding window log stores every request timestamp and counts "
                    "those within the last N seconds; it is exact but needs memory per request. "
                    "A sliding window counter approximates the log by weighting the previous "
                    "window's count, which is cheap and usually within a few percent. A token "
                    "bucket keeps a token count and a last-refill time per key: it allows "
                    "bursts up to the bucket capacity while enforcing the average rate, and "
                    "needs only two values per key, so it fits well in a database row.",
                    "11:01",
                ),
            ),
            gold=("q53",),
        ),
        ChatTurn(
            prompt=(
                Msg(U, "if the state is in postgres, which one is cheapest per request?", "11:06"),
            ),
            outcome=(
                Msg(
                    A,
                    "The token bucket: one row per key with `tokens` and `updated_at`, updated "
                    "by a single `INSERT ... ON CONFLICT ... DO UPDATE ... RETURNING` that "
                    "computes the refill from `now() - updated_at`. A sliding log needs an "
                    "insert per request plus a range count and periodic cleanup, which is far "
                    "more write volume. A fixed window is just as cheap but keeps the boundary "
                    "burst you are probably trying to get rid of.",
                    "11:07",
                ),
            ),
            gold=("q53",),
        ),
        ChatTurn(
            prompt=(Msg(U, "any gotchas with doing it in postgres?", "11:12"),),
            outcome=(
                Msg(
                    A,
                    "Three. Keep the table logged: unlogged tables are truncated after a crash, "
                    "which silently resets every limit. Watch hot rows: one key at very high "
                    "rates serializes on its row lock, so above a few hundred requests per "
                    "second per key you would shard the bucket. And decide what happens when "
                    "the database is unavailable: failing closed (rejecting requests) is the "
                    "safer default for a public API.",
                    "11:13",
                ),
            ),
            plants=("insight",),
        ),
    ),
)

DESIGN_REVIEW = ImportChat(
    key="design-review-rate-limits",
    task_id="design-review-2026-10-19-rate-limits",
    file="design-review-2026-10-19.jsonl",
    date="2026-10-19",
    kind="humans",
    timestamps="offset",
    project="ledgerline",
    summary="Exported team chat: Mara and Jonas review the rate limiter after the Redis "
    "eviction incident and decide to move limits to Postgres (two humans, no agent).",
    turns=(
        ChatTurn(
            prompt=(
                Msg(
                    MARA,
                    "Agenda for today: the rate limiter after Friday's incident, and whether we "
                    "keep Redis at all. Short version of the incident: during the Acme backfill "
                    "on 16 Oct, Redis hit maxmemory, allkeys-lru evicted the rl:* counters, and "
                    "the limiter let roughly 4x the allowed traffic through for 20 minutes.",
                    "14:00",
                    title="Design review: rate limiting and Redis",
                ),
            ),
            outcome=(
                Msg(
                    JONAS,
                    "I read the postmortem. What worries me is that nothing failed loudly: "
                    "evicted counters just look like fresh windows. That's the wrong failure "
                    "mode for a limiter.",
                    "14:02",
                ),
                Msg(
                    JONAS,
                    "And honestly, Redis is only there for two things now: the Celery broker "
                    "and those counters.",
                    "14:02",
                ),
            ),
            plants=("insight",),
        ),
        ChatTurn(
            prompt=(
                Msg(
                    MARA,
                    "Celery moves to SQS with the hosting migration anyway. So if the limiter "
                    "moves, Redis can go.",
                    "14:04",
                ),
            ),
            outcome=(
                Msg(
                    JONAS,
                    "Then let's move it. Postgres is already our source of truth and has "
                    "headroom: peak is about 40 requests per second across all keys.",
                    "14:05",
                ),
            ),
        ),
        ChatTurn(
            prompt=(
                Msg(
                    MARA,
                    "My worry was latency. Every API request doing an UPDATE on a hot row?",
                    "14:07",
                ),
            ),
            outcome=(
                Msg(
                    JONAS,
                    "One row per API key, not one global row, so contention is per customer. A "
                    "single INSERT ... ON CONFLICT DO UPDATE ... RETURNING is a few hundred "
                    "microseconds on our instance: I measured 0.4 ms p50 on staging with "
                    "pgbench and a 10-key workload.",
                    "14:09",
                ),
                Msg(
                    JONAS,
                    "And we switch to a token bucket while we're at it, so nobody gets 200 "
                    "requests through around a window boundary.",
                    "14:09",
                ),
            ),
        ),
        ChatTurn(
            prompt=(
                Msg(
                    MARA,
                    "OK. Decision then: we drop Redis for rate limiting and keep the limits in "
                    "Postgres, in a rate_limit_buckets table with a token bucket per API key, "
                    "because evictions silently disabled the limiter and Redis would otherwise "
                    "only exist for this. I'll implement it this week.",
                    "14:12",
                ),
            ),
            outcome=(
                Msg(
                    JONAS,
                    "Agreed. One request: fail closed. If the limiter query errors, return 503 "
                    "instead of letting the traffic through.",
                    "14:13",
                ),
            ),
            gold=("q01", "q54"),
            plants=("decision", "contradiction"),
        ),
        ChatTurn(
            prompt=(
                Msg(
                    MARA,
                    "Fail closed for the public API, yes. For our own dashboard keys I'd rather "
                    "fail open, they're internal.",
                    "14:15",
                ),
            ),
            outcome=(Msg(JONAS, "Fine, make it a per-key flag then, default closed.", "14:15"),),
            gold=("q54",),
            plants=("decision",),
        ),
        ChatTurn(
            prompt=(
                Msg(MARA, "Last point on this: unlogged or normal table for the buckets?", "14:17"),
            ),
            outcome=(
                Msg(
                    JONAS,
                    "Normal. Unlogged tables are truncated after a crash, and then we're back "
                    "to 'the limiter silently reset'. The write volume is tiny anyway.",
                    "14:18",
                ),
                Msg(
                    JONAS,
                    "Lesson learned from Friday: a limiter whose state can vanish must either "
                    "fail loudly or never lose its state.",
                    "14:18",
                ),
            ),
            plants=("decision", "insight"),
        ),
        ChatTurn(
            prompt=(
                Msg(
                    MARA,
                    "Second topic, quickly: invoice PDFs. Do we still render them with "
                    "WeasyPrint in the web process?",
                    "14:21",
                ),
            ),
            outcome=(
                Msg(
                    JONAS,
                    "Only receipts moved to Celery. Monthly invoices still render inline when "
                    "someone clicks 'regenerate' in the admin, and that takes 9 seconds for big "
                    "customers.",
                    "14:22",
                ),
                Msg(JONAS, "Move it to a task as well; the admin can poll.", "14:22"),
            ),
            plants=("topic_switch",),
        ),
        ChatTurn(
            prompt=(
                Msg(
                    MARA,
                    "Will do. And I'll write the rate limit decision up as an ADR and link "
                    "these notes.",
                    "14:24",
                ),
            ),
            outcome=(Msg(JONAS, "👍 Send me the MR when it's ready.", "14:24"),),
        ),
    ),
)

# A decision that cites an article of the demo inbox (memory_pipeline/demo/documents/): the
# inbox stores the article as a source, and relationship discovery links the two.
PARQUET_STREAMING = ImportChat(
    key="team-chat-meterflow-parquet",
    task_id="team-chat-2026-11-03-meterflow-parquet",
    file="team-chat-2026-11-03.jsonl",
    date="2026-11-03",
    kind="humans",
    timestamps="offset",
    project="meterflow",
    summary="Exported team chat: Mara and Priya decide how meterflow writes its monthly Parquet "
    "rollups, citing the polars streaming article in the inbox.",
    turns=(
        ChatTurn(
            prompt=(
                Msg(
                    MARA,
                    "Did you read the article I dropped in the channel? "
                    "https://dataeng.example/polars-streaming-sinks. It says sink_parquet on a "
                    "lazy scan keeps peak memory flat because it never materialises the frame.",
                    "10:02",
                ),
            ),
            outcome=(
                Msg(
                    "Priya",
                    "Yes. Their benchmark is close to our monthly rollup: one month of "
                    "15-minute readings, and peak RSS went from about 14 GB with collect() "
                    "to 1.3 GB with sink_parquet.",
                    "10:04",
                ),
            ),
        ),
        ChatTurn(
            prompt=(
                Msg(
                    MARA,
                    "Decision, then: the monthly Parquet rollups are written with "
                    "scan_parquet(...).group_by(...).sink_parquet() instead of collect() and "
                    "write_parquet(), with row groups of 128k rows and zstd level 3, because "
                    "that article's measurements match our data and it keeps the job under "
                    "the 4 GB memory limit of the VM.",
                    "10:07",
                ),
            ),
            outcome=(
                Msg(
                    "Priya",
                    "Agreed. I'll change the rollup job and link the article in the ADR.",
                    "10:08",
                ),
            ),
        ),
    ),
)

CHATS = (PG_BACKUPS, RATE_LIMIT_ALGORITHMS, DESIGN_REVIEW, PARQUET_STREAMING)
