"""meterflow: nightly smart-meter ingestion into Postgres and Parquet with polars."""

from __future__ import annotations

from memory_pipeline.demo.conversations.projects import METERFLOW
from memory_pipeline.demo.spec import (
    Delegate,
    Edit,
    Read,
    Say,
    Search,
    Session,
    Shell,
    Turn,
    Write,
)

# A clearly fake OpenAI-style key the user pastes from a .env file (redacted at capture).
FAKE_OPENAI_KEY = "sk-proj-DEMOfakeKEY0000mfLq81ZkT3BlbkFJdemoOnlyNotARealKey42"

INGEST_DESIGN = Session(
    key="meterflow-ingest-design",
    tool="claude",
    project=METERFLOW,
    date="2026-09-25",
    ai_title="Design the meter reading ingestion",
    summary="First meterflow session: an Explore subagent surveys the CSV samples, then the "
    "load design (upsert + day partitions), header aliases, gaps, a cron schedule.",
    turns=(
        Turn(
            at="13:00",
            prompt=(
                "new project: meterflow. every night the utility drops CSV exports of 15-minute "
                "meter readings on their SFTP (about 400 meters, one file per day). I want them "
                "in postgres for the dashboards and as parquet for analysis. can you look at "
                "the samples in samples/ first and tell me what we're dealing with?"
            ),
            steps=(
                Say(
                    "I'll have an Explore agent survey the sample files while I look at the "
                    "repository layout."
                ),
                Delegate(
                    key="meterflow-csv-survey",
                    description="Survey CSV sample exports",
                    agent_type="Explore",
                    prompt=(
                        "Survey the CSV files in /home/mara/src/meterflow/samples/. Report: "
                        "delimiter, decimal separator, encoding, header names and whether they "
                        "vary between files, timestamp format and time zone, rows per meter per "
                        "day, and anything unusual (duplicates, gaps, footer lines)."
                    ),
                    steps=(
                        Shell(
                            "ls samples/ | head -3; ls samples/*.csv | wc -l; file "
                            "samples/export_2026-09-20.csv",
                            "README_Schnittstelle.pdf\nexport_2026-08-21.csv\n"
                            "export_2026-08-22.csv\n31\nsamples/export_2026-09-20.csv: "
                            "ISO-8859 text, with CRLF line terminators",
                            description="List the samples and detect the encoding",
                        ),
                        Shell(
                            "head -3 samples/export_2026-09-13.csv samples/export_2026-09-14.csv "
                            "| iconv -f windows-1252 -t utf-8; tail -1 "
                            "samples/export_2026-09-20.csv",
                            "==> samples/export_2026-09-13.csv <==\nZählpunkt;Zeitstempel;Wert "
                            "(kWh);Status\nDE0042000000000000000000000001;13.09.2026 00:15;"
                            "0,253;W\n\n==> samples/export_2026-09-14.csv <==\nMesslokation;"
                            "Zeitstempel;Wert;Status\nDE0042000000000000000000000001;14.09.2026"
                            " 00:15;0,261;W\nSumme;;;9871,204",
                            description="Compare headers before and after the rename",
                        ),
                    ),
                    answer=(
                        "Findings for the 31 files in samples/ (export_2026-08-21.csv to "
                        "export_2026-09-20.csv):\n"
                        "- Delimiter `;`, decimal comma (`0,253`), encoding Windows-1252 "
                        "(`file` says ISO-8859; `ß` and `ü` appear in locations), CRLF.\n"
                        "- Header: up to 2026-09-13 `Zählpunkt;Zeitstempel;Wert (kWh);Status`, "
                        "from 2026-09-14 `Messlokation;Zeitstempel;Wert;Status`.\n"
                        "- Timestamps `dd.mm.yyyy hh:mm` without offset, 15-minute slots from "
                        "00:15 to 24:00 (the last slot is written `24:00`, not 00:00 of the "
                        "next day).\n"
                        "- 96 rows per meter per day for 409 of 412 meters; three meters have "
                        "gaps (8, 12 and 40 missing slots).\n"
                        "- Every file ends with a footer line `Summe;;;<total>`.\n"
                        "- No duplicate (meter, timestamp) pairs."
                    ),
                ),
                Shell(
                    "ls",
                    "README.md\nmeterflow\npyproject.toml\nsamples\ntests",
                    description="Look at the repository layout",
                ),
            ),
            answer=(
                "The exports are less regular than they look. They're `;`-separated with a "
                "decimal comma (`0,253`), encoded in Windows-1252 (locations contain `ß` and "
                "`ü`), and every file ends with a footer line `Summe;;;<total>` that must be "
                "skipped. Timestamps are local wall time like `20.09.2026 00:15` without an "
                "offset, so Europe/Berlin, and the last slot of a day is written as `24:00`. "
                "On 14 September the utility renamed the column `Zählpunkt` to "
                "`Messlokation`, so headers differ across the 31 samples. Each meter has 96 "
                "rows per day, except three meters with gaps."
            ),
            gold=("q38",),
            plants=("insight",),
        ),
        Turn(
            at="13:31",
            prompt="ok. design the load: postgres target table + parquet",
            answer=(
                'We\'ll use polars to parse (`pl.read_csv(..., separator=";", '
                'decimal_comma=True, encoding="windows-1252")`) into one normalized frame and '
                "write it twice. Postgres gets `readings(meter_id text, reading_ts timestamptz, "
                "kwh numeric(12,3), source text, loaded_at timestamptz, primary key (meter_id, "
                "reading_ts))`, loaded with `COPY` into a temp table and then `INSERT ... ON "
                "CONFLICT (meter_id, reading_ts) DO UPDATE SET kwh = excluded.kwh`, so "
                "re-running a day is idempotent and late corrections from the utility "
                "overwrite the old value. Parquet goes to "
                "`/srv/meterflow/parquet/readings/reading_date=2026-09-20/part-0.parquet`, one "
                "partition per day, rewritten as a whole when a day is reloaded, because every "
                "load and every correction is per day."
            ),
            gold=("q39",),
            plants=("decision",),
        ),
        Turn(
            at="13:55",
            prompt="the header rename: how do we handle that without an if per column",
            steps=(
                Write(
                    "meterflow/schema.py",
                    'COLUMN_ALIASES = {\n    "Zählpunkt": "meter_id",\n    "Messlokation": '
                    '"meter_id",\n    "Zeitstempel": "reading_local",\n    "Wert (kWh)": '
                    '"kwh",\n    "Wert": "kwh",\n    "Status": "status",\n}\n\n\nclass '
                    "SchemaDriftError(ValueError):\n    pass\n",
                ),
                Shell(
                    "pytest tests/test_schema.py -q",
                    "...                                                       [100%]\n"
                    "3 passed in 0.31s",
                    description="Run the schema tests",
                ),
            ),
            answer=(
                "Added `meterflow/schema.py` with `COLUMN_ALIASES` (`Zählpunkt` and "
                "`Messlokation` map to `meter_id`, `Zeitstempel` to `reading_local`, `Wert "
                "(kWh)` and `Wert` to `kwh`) and `normalize_columns(df)`, which renames known "
                'aliases and raises `SchemaDriftError("unknown columns: ...")` for anything '
                "else, so the next rename fails the load loudly instead of producing nulls. "
                "Tests cover both header variants from the samples and an unknown column."
            ),
        ),
        Turn(
            at="14:20",
            prompt="run it on all 31 samples into my local postgres",
            steps=(
                Shell(
                    "time python -m meterflow.load samples/*.csv",
                    "loaded 31 files: 1226052 rows (1226052 upserted), 31 parquet partitions "
                    "(21.3 MB)\n\nreal\t0m38.214s",
                    description="Load all samples",
                ),
                Shell(
                    "python -m meterflow.load samples/*.csv | head -1",
                    "loaded 31 files: 1226052 rows (0 new, 1226052 unchanged), 31 parquet "
                    "partitions (21.3 MB)",
                    description="Load again to check idempotency",
                ),
            ),
            answer=(
                "Loaded all 31 files: 1,226,052 rows into `readings` (412 meters x 96 slots x "
                "31 days, minus the 60 missing slots of the three gappy meters) in 38 s, most of "
                "it the `COPY`. Running the same command again changes nothing: 0 new rows, "
                "everything unchanged. The Parquet side is 31 partitions, 21.3 MB in total with "
                "zstd."
            ),
        ),
        Turn(
            at="14:41",
            prompt="those 3 meters with gaps: what does the utility expect us to do?",
            steps=(
                Shell(
                    "pdftotext -f 4 -l 4 samples/README_Schnittstelle.pdf - | grep -A3 '4.2'",
                    "4.2 Fehlende Messwerte\nFehlende Werte werden innerhalb von 10 "
                    "Werktagen durch eine Korrekturlieferung ersetzt\n(Status E = "
                    "Ersatzwert).",
                    description="Read the interface spec on gaps",
                ),
            ),
            answer=(
                "Their interface spec (samples/README_Schnittstelle.pdf, section 4.2) says "
                "missing values are replaced by a correction delivery within 10 working days, "
                "marked `Status=E` (an estimated substitute value). So we shouldn't "
                "interpolate: the loader records gaps in a `reading_gaps(meter_id, day, "
                "missing_slots)` table and the dashboard shows those periods hatched. When the "
                "correction file arrives, the upsert fills the slots and a daily job clears "
                "resolved gaps."
            ),
            plants=("decision",),
        ),
        Turn(
            at="15:02",
            prompt="perfect. schedule it for 02:30 every night",
            steps=(
                Shell(
                    "(crontab -l; echo '30 2 * * * cd /home/mara/src/meterflow && "
                    ".venv/bin/python -m meterflow.fetch_and_load >> logs/ingest-$(date "
                    "+\\%F).log 2>&1') | crontab -",
                    "",
                    description="Install the nightly cron entry",
                ),
            ),
            answer=(
                "Installed a cron entry for user mara: `30 2 * * * cd /home/mara/src/meterflow "
                "&& .venv/bin/python -m meterflow.fetch_and_load >> logs/ingest-$(date "
                "+\\%F).log 2>&1`. The fetch step downloads yesterday's file over SFTP with "
                "the key in `~/.ssh/meterflow_sftp`, then runs the same load as above. Logs go "
                "to one file per day under `logs/`."
            ),
            plants=("decision", "contradiction"),
        ),
    ),
)

GRIDPULSE = Session(
    key="meterflow-gridpulse-client",
    tool="codex",
    project=METERFLOW,
    date="2026-10-02",
    summary="A client for the GridPulse solar API that stays under its rate limit: token "
    "bucket, backoff with jitter, and what the limiter really does.",
    turns=(
        Turn(
            at="10:30",
            prompt=(
                "the GridPulse API for the solar inverters gives me 429s when I pull the "
                "15-min data for all 58 sites. docs say 10 requests/second, burst 20. write a "
                "client that respects that"
            ),
            steps=(
                Write(
                    "meterflow/gridpulse.py",
                    'class RateLimiter:\n    """Token bucket shared by all worker threads.'
                    '"""\n\n    def __init__(self, rate: float, capacity: int, clock=time.'
                    "monotonic, sleep=time.sleep):\n        self.rate = rate\n        self."
                    "capacity = capacity\n        self.tokens = float(capacity)\n",
                ),
            ),
            answer=(
                "We'll use a client-side token bucket (capacity 20, refill 10 per second) in "
                "front of `httpx.Client`, shared by all worker threads, plus a retry on 429 and "
                "503 that honours `Retry-After` and otherwise backs off exponentially with full "
                "jitter (`sleep = random.uniform(0, min(60, 0.5 * 2**attempt))`, at most 6 "
                "attempts). The bucket keeps us under the documented limit in the normal case, "
                "and the backoff covers the cases where their limiter disagrees with ours, "
                "such as other clients on the same key; full jitter keeps the threads from "
                "retrying in lockstep. It's all in `meterflow/gridpulse.py`: `RateLimiter` and "
                "`GridPulseClient.get_site_readings(site_id, day)`."
            ),
            gold=("q40",),
            plants=("decision", "cross_project"),
        ),
        Turn(
            at="10:58",
            prompt="tests?",
            steps=(
                Write(
                    "tests/test_gridpulse.py",
                    "import respx\n\n\ndef test_burst_is_spaced(fake_clock):\n    limiter = "
                    "RateLimiter(rate=10, capacity=20, clock=fake_clock.now, sleep=fake_clock."
                    "sleep)\n",
                ),
                Shell(
                    "pytest tests/test_gridpulse.py -q",
                    ".........                                                 [100%]\n"
                    "9 passed in 0.41s",
                ),
            ),
            answer=(
                "`tests/test_gridpulse.py` mocks the API with `respx` and injects a fake clock "
                "and sleep, so nothing actually waits. It checks that a burst of 50 calls goes "
                "out as 20 at once and then 10 per second, that a 429 with `Retry-After: 3` "
                "waits exactly 3 s, that three 503s in a row back off within the jitter bounds "
                "and then succeed, and that 6 failures raise `GridPulseUnavailable`. 9 tests, "
                "0.4 s."
            ),
        ),
        Turn(
            at="11:40",
            prompt=(
                "ran it for all 58 sites: still a few 429s in the log, roughly 1 in 200 requests"
            ),
            steps=(
                Shell(
                    "grep -m3 ' 429 ' logs/gridpulse-debug.log",
                    "11:31:07.012 GET /v2/sites/17/readings 429 X-RateLimit-Limit=10 "
                    "X-RateLimit-Remaining=0 X-RateLimit-Reset=1790933468\n11:33:40.006 GET "
                    "/v2/sites/41/readings 429 X-RateLimit-Limit=10 X-RateLimit-Remaining=0 "
                    "X-RateLimit-Reset=1790933621\n11:36:02.998 GET /v2/sites/5/readings 429 "
                    "X-RateLimit-Limit=10 X-RateLimit-Remaining=0 X-RateLimit-Reset=1790933763",
                ),
            ),
            answer=(
                "Turns out the documented burst doesn't exist: the 429 responses carry "
                "`X-RateLimit-Limit: 10` with a reset on every whole second, so their limiter "
                "is a fixed one-second window of 10 requests. Our bucket starts with 20 tokens "
                "and refills during pauses, so after a slow page it can fire up to 20 requests "
                "into one of their windows. With capacity 10 the rerun made 17,400 requests "
                "with zero 429s; the retry logic stays as a safety net. I also log "
                "`X-RateLimit-Remaining` at debug level so a future change on their side is "
                "visible."
            ),
            gold=("q40",),
            plants=("insight",),
        ),
        Turn(
            at="12:02",
            prompt="the api key is in the code now? i saw GRIDPULSE in the diff",
            steps=(
                Shell(
                    "git log -p -S GRIDPULSE --oneline | grep -n 'GRIDPULSE' | head",
                    '14:+    api_key = os.environ["GRIDPULSE_API_KEY"]\n'
                    '31:+    monkeypatch.setenv("GRIDPULSE_API_KEY", "test-key")',
                ),
            ),
            answer=(
                'Only the variable name. `GridPulseClient` reads `os.environ["GRIDPULSE_API_KEY'
                '"]`, and the tests set a dummy value `test-key`. The real key is in '
                "`/etc/meterflow/env` on the server, which isn't in the repository, and `.env` "
                "is in `.gitignore` for local runs. `git log -p -S GRIDPULSE` shows that no key "
                "was ever committed."
            ),
        ),
        Turn(
            at="12:15",
            prompt="cool. how long does a full day pull take now",
            answer=(
                "A full day for all 58 sites is 1,392 requests (58 sites x 24 hourly pages), "
                "and at a steady 10 per second that takes about 2 minutes 19 seconds, with 4 "
                "worker threads. It's bounded by their rate limit, not by us, so more threads "
                "wouldn't help. A 30-day backfill would take roughly 70 minutes."
            ),
        ),
    ),
)

AGGREGATION_OOM = Session(
    key="meterflow-aggregation-oom",
    tool="claude",
    project=METERFLOW,
    date="2026-10-09",
    ai_title="Fix the OOM in the monthly aggregation",
    summary="The monthly job is OOM-killed; the user corrects 'add memory' into 'use less'; "
    "polars lazy scans; DuckDB is not needed yet.",
    turns=(
        Turn(
            at="15:10",
            prompt=(
                "the monthly aggregation job got OOM-killed on the 4GB VM: `Out of memory: "
                "Killed process 18812 (python) total-vm:6139724kB`. it joins readings with "
                "meters and sums per customer per hour"
            ),
            steps=(
                Read(
                    "meterflow/aggregate.py",
                    "def monthly(month: str) -> pl.DataFrame:\n    readings = pl.read_parquet("
                    'f"/srv/meterflow/parquet/readings/reading_date={month}-*/*.parquet")\n'
                    '    meters = pl.read_database("select * from meters", engine)\n    joined '
                    '= readings.join(meters, on="meter_id")\n    active = joined.filter(pl.col'
                    '("meter_id").map_elements(is_active))\n    return active.group_by('
                    '"customer_id", pl.col("reading_ts").dt.truncate("1h")).agg(pl.col('
                    '"kwh").sum())\n',
                ),
            ),
            answer=(
                "The job reads the whole month eagerly with `pl.read_parquet(...)` (1.19 million "
                "readings for September) and joins it with `meters`, which is a history table "
                "with one row per meter and tariff change, about 32 rows per meter. So the join "
                "fans out to some 38 million rows carrying every meter column, roughly 5 GB, "
                "before the job filters to the current rows and groups. The quick fix is to raise "
                "`MemoryMax=` in the systemd unit to 8G and give the VM 8 GB of RAM."
            ),
            gold=("q41",),
        ),
        Turn(
            at="15:24",
            prompt=(
                "That's not what I asked. I don't want the job to get more memory, I want it to "
                "use less. the VM has 4GB for a reason."
            ),
            steps=(
                Edit(
                    "meterflow/aggregate.py",
                    "    readings = pl.read_parquet(",
                    "    readings = pl.scan_parquet(",
                ),
                Shell(
                    "/usr/bin/time -v python -m meterflow.aggregate --month 2026-09 2>&1 | "
                    "grep -E 'Maximum resident|Elapsed'",
                    "\tElapsed (wall clock) time (h:mm:ss or m:ss): 0:48.12\n\tMaximum "
                    "resident set size (kbytes): 624812",
                    description="Measure peak memory of the rewritten job",
                ),
            ),
            answer=(
                "Fair: more RAM only hides the problem until a bigger month arrives. I rewrote "
                "the job on the lazy API: `pl.scan_parquet(...)` with the `reading_date` filter "
                "pushed down into the scan, the meter history cut to the current rows (`valid_to "
                "IS NULL`) and the two columns we need (`meter_id`, `customer_id`) before the "
                "join, and the result written with `sink_parquet()` on the streaming engine, so "
                "the month is never in memory at once. Peak RSS for September went from 6.1 GB "
                "(killed) to 610 MB, and it runs in 48 s instead of over 3 minutes. Lesson "
                "learned: with polars, `read_*` followed by a join is the memory trap; start from "
                "`scan_*` and let predicate pushdown drop rows before the join; and check that a "
                "join key is unique on the side you think it is."
            ),
            gold=("q41",),
            plants=("correction", "insight"),
        ),
        Turn(
            at="15:47",
            prompt="how do I check that the pushdown actually happens",
            steps=(
                Shell(
                    "python -c 'from meterflow.aggregate import monthly_query; "
                    'print(monthly_query("2026-09").explain())\' | head -8',
                    'AGGREGATE\n\t[col("kwh").sum()] BY [col("customer_id"), '
                    'col("reading_ts").dt.truncate(["1h"])]\n  INNER JOIN:\n  LEFT PLAN '
                    'ON: [col("meter_id")]\n    Parquet SCAN [/srv/meterflow/parquet/'
                    "readings/reading_date=2026-09-01/part-0.parquet, ... 29 other sources]\n"
                    '    PROJECT 3/5 COLUMNS\n    SELECTION: col("meter_id").is_in([...])',
                    description="Print the optimized query plan",
                ),
            ),
            answer=(
                "Call `.explain()` on the lazy query before collecting it: in the optimized "
                "plan the filter should appear inside the `Parquet SCAN` node as `SELECTION: "
                "...` and the projection as `PROJECT 3/5 COLUMNS`. Our job shows both, with "
                "the join above the scan on three columns only. A filter that calls a Python "
                "function (`map_elements`) can't be pushed down, which is why I replaced the "
                "`is_active` lambda with an `is_in` on the active meter ids."
            ),
        ),
        Turn(
            at="16:05",
            prompt="nice. should we switch from parquet files to duckdb for this kind of query?",
            answer=(
                "Not now: we'll stay with polars on Parquet. The lazy rewrite solved the memory "
                "problem, the whole dataset is about 260 MB of Parquet per year, and the "
                "dashboards read from Postgres anyway, so DuckDB would add a second query "
                "engine without fixing anything we have today. If we want ad-hoc SQL over the "
                "files later, DuckDB can read the same `reading_date=` partitions directly "
                "(`read_parquet('.../*/*.parquet', hive_partitioning = true)`) without "
                "changing how we write them."
            ),
            gold=("q42",),
            plants=("decision",),
        ),
        Turn(
            at="16:22",
            prompt="add a memory regression test so this doesn't come back",
            steps=(
                Write(
                    "tests/test_aggregate_memory.py",
                    "import resource\nimport subprocess\n\nimport pytest\n\n\n@pytest.mark.slow"
                    "\ndef test_monthly_aggregation_stays_small(synthetic_month):\n    "
                    'subprocess.run(["python", "-m", "meterflow.aggregate", "--root", '
                    "str(synthetic_month)], check=True)\n    peak_kb = resource.getrusage("
                    "resource.RUSAGE_CHILDREN).ru_maxrss\n    assert peak_kb < 300 * 1024\n",
                ),
                Shell(
                    "pytest -m slow tests/test_aggregate_memory.py -q",
                    ".                                                         [100%]\n"
                    "1 passed in 9.04s",
                    description="Run the memory regression test",
                ),
            ),
            answer=(
                "Added `tests/test_aggregate_memory.py`, marked `slow`: it generates a synthetic "
                "month (400 meters x 2,976 slots, about 1.2 million rows, plus a meter history "
                "with 32 versions per meter) into a temporary Parquet dataset, runs the "
                "aggregation in a subprocess, and asserts that peak RSS from "
                "`resource.getrusage(RUSAGE_CHILDREN).ru_maxrss` stays under 300 MB. The old "
                "eager version peaks at 820 MB on that data, so the test would have caught it. It "
                "takes 9 s and runs in the nightly CI job."
            ),
        ),
    ),
)

LOCATIONS_AND_TIMER = Session(
    key="meterflow-locations-timer",
    tool="codex",
    project=METERFLOW,
    date="2026-10-12",
    summary="Normalizing location strings (rules first, LLM for the rest, cached); the user "
    "pastes an API key; topic switch: cron misses a run, so systemd timers (replaces cron).",
    turns=(
        Turn(
            at="19:00",
            prompt=(
                "meter location strings are a mess ('Hauptstr. 5, Keller', 'Hauptstrasse 5 "
                "(Keller)', 'HAUPTSTR 5 KG'...). I want to normalize them with an LLM. here's my "
                f".env for the OpenAI key: OPENAI_API_KEY={FAKE_OPENAI_KEY}"
            ),
            steps=(
                Shell(
                    "psql meterflow -Atc 'select count(distinct location) from meters'",
                    "1140",
                ),
            ),
            answer=(
                "Before anything else: that key is now in this session's transcript, so revoke "
                "it in the OpenAI dashboard and create a new one. Put the new one in "
                "`/etc/meterflow/env`, not in the repository; the code will read "
                "`OPENAI_API_KEY` from the environment. As for the strings: there are 1,140 "
                "distinct locations, which is small. I'd first apply deterministic rules "
                "(lowercase, `str.`/`strasse` to `straße`, strip punctuation, `KG` to `Keller`) "
                "and only send what the rules can't resolve to the model."
            ),
            plants=("secret",),
        ),
        Turn(
            at="19:22",
            prompt="ok, new key is in /etc/meterflow/env. do it",
            steps=(
                Write(
                    "meterflow/locations.py",
                    'RULES = [\n    (re.compile(r"\\bstr(asse|aße|\\.)?\\b", re.I), '
                    '"straße"),\n    (re.compile(r"\\b(kg|keller)\\b", re.I), "Keller"),\n'
                    "]\n",
                ),
                Shell(
                    "python -m meterflow.locations --backfill",
                    "1140 distinct locations: 1049 resolved by rules, 91 sent to gpt-5-mini "
                    "in 2 batches, 91 cached\nestimated cost: $0.03",
                ),
            ),
            answer=(
                "Rules first, LLM second, and every answer cached: `normalize_location()` "
                "applies the regex rules, which resolved 1,049 of the 1,140 strings (92%); the "
                "remaining 91 went to `gpt-5-mini` in batches of 50 with a JSON schema "
                "response (`street`, `house_number`, `unit`). We'll cache every result in a "
                "`location_normalized(raw text primary key, normalized jsonb, method text)` "
                "table, so each raw string is sent at most once and reruns cost nothing; the "
                "whole backfill cost $0.03. Rows with `method = 'llm'` are flagged in the "
                "dashboard until you've reviewed them."
            ),
            gold=("q44",),
            plants=("decision",),
        ),
        Turn(
            at="19:51",
            prompt=(
                "Unrelated, but the 02:30 cron job didn't run on Saturday, the server was "
                "rebooting for updates at that time. can cron catch up?"
            ),
            steps=(
                Write(
                    "deploy/systemd/meterflow-ingest.timer",
                    "[Unit]\nDescription=Nightly meterflow ingestion\n\n[Timer]\nOnCalendar=*-*-* "
                    "02:30:00 Europe/Berlin\nPersistent=true\n\n[Install]\nWantedBy=timers."
                    "target\n",
                ),
                Shell(
                    "sudo cp deploy/systemd/meterflow-ingest* /etc/systemd/system/ && sudo "
                    "systemctl daemon-reload && sudo systemctl enable --now "
                    "meterflow-ingest.timer && crontab -r && systemctl list-timers "
                    "meterflow-ingest.timer --no-pager",
                    "NEXT                        LEFT     LAST PASSED UNIT                   "
                    "ACTIVATES\nTue 2026-10-13 02:30:00 CEST 6h left  -    -      "
                    "meterflow-ingest.timer meterflow-ingest.service\n\n1 timers listed.",
                ),
            ),
            answer=(
                "Cron can't: a job missed while the machine is down is simply skipped. We'll "
                "use a systemd timer instead of cron for the nightly load: "
                "`meterflow-ingest.timer` with `OnCalendar=*-*-* 02:30:00 Europe/Berlin` and "
                "`Persistent=true` runs a missed job once at the next boot, and the output goes "
                "to the journal (`journalctl -u meterflow-ingest`) instead of the hand-rolled "
                "`logs/ingest-*.log` redirect. Both unit files are in `deploy/systemd/`, "
                "installed and enabled, and the crontab line is gone; `systemctl list-timers` "
                "shows the next run tonight at 02:30."
            ),
            gold=("q43",),
            plants=("decision", "contradiction", "topic_switch"),
        ),
        Turn(
            at="20:06",
            prompt="backfill saturday's data",
            steps=(
                Shell(
                    "sudo systemctl start meterflow-ingest@2026-10-09.service && journalctl -u "
                    "meterflow-ingest@2026-10-09 --no-pager | tail -2",
                    "Oct 12 20:07:41 meter1 python[40211]: 2026-10-09: 39552 rows upserted, "
                    "partition reading_date=2026-10-09 written\nOct 12 20:07:41 meter1 "
                    "systemd[1]: meterflow-ingest@2026-10-09.service: Deactivated "
                    "successfully.",
                ),
            ),
            answer=(
                "Ran `systemctl start meterflow-ingest@2026-10-09` (the template unit takes the "
                "day as its instance name): 39,552 rows loaded (412 meters x 96 slots) and the "
                "`reading_date=2026-10-09` Parquet partition written. Sunday's run happened "
                "normally, so the dashboards have no gap any more."
            ),
        ),
    ),
)

NIGHTLY_SUMMARY = Session(
    key="meterflow-nightly-summary",
    tool="claude",
    project=METERFLOW,
    date="2026-10-15",
    mode="sdk",
    summary="`claude -p` run by a nightly script to summarize the ingest journal (delegated).",
    turns=(
        Turn(
            at="06:00",
            prompt=(
                "Summarize the problems in this journal output from last night's meterflow "
                "ingest. List each distinct error once with a count, and say whether the load "
                "completed.\n\nOct 15 02:30:01 meter1 python[51822]: fetching "
                "export_2026-10-14.csv\nOct 15 02:30:09 meter1 python[51822]: WARNING sftp: "
                "connection reset by peer, retry 1/5\nOct 15 02:30:17 meter1 python[51822]: "
                "WARNING sftp: connection reset by peer, retry 1/5\nOct 15 02:31:02 meter1 "
                "python[51822]: WARNING gridpulse: ReadTimeout site=23, retry 1/6\nOct 15 "
                "02:31:40 meter1 python[51822]: WARNING gaps: DE0042000000000000000000000388 "
                "missing 12 slots\nOct 15 02:33:12 meter1 python[51822]: 2026-10-14: 39540 "
                "rows upserted, partition reading_date=2026-10-14 written"
            ),
            answer=(
                "The load completed: 39,540 rows for 2026-10-14 were upserted and the Parquet "
                "partition was written.\n\nDistinct problems:\n- `sftp: connection reset by "
                "peer` (2x), both recovered on the first retry.\n- `gridpulse: ReadTimeout` for "
                "site 23 (1x), recovered on retry.\n- Meter DE0042000000000000000000000388 is "
                "missing 12 slots (1x), recorded as a gap.\n\nNothing needs manual action."
            ),
        ),
    ),
)

BACKFILL_LOCK = Session(
    key="meterflow-backfill-lock",
    tool="codex",
    project=METERFLOW,
    date="2026-10-22",
    summary="Two loads of the same day ran at once and duplicated a Parquet partition: "
    "advisory lock per day (same pattern as ledgerline) and atomic partition swaps.",
    turns=(
        Turn(
            at="18:45",
            prompt=(
                "found duplicate parquet files in reading_date=2026-10-19: part-0.parquet and "
                "part-0-1.parquet with the same rows. I had started a manual backfill while the "
                "timer run was still going"
            ),
            steps=(
                Shell(
                    "ls -l /srv/meterflow/parquet/readings/reading_date=2026-10-19/ && python "
                    "-c \"import polars as pl; print(pl.scan_parquet('/srv/meterflow/parquet/"
                    "readings/reading_date=2026-10-19/*.parquet').select(pl.len()).collect()"
                    '.item())"',
                    "-rw-r--r-- 1 meterflow meterflow 702311 Oct 20 02:33 part-0-1.parquet\n"
                    "-rw-r--r-- 1 meterflow meterflow 702311 Oct 20 02:33 part-0.parquet\n"
                    "79104",
                ),
            ),
            answer=(
                "That's the root cause: both processes rewrote the 2026-10-19 partition "
                "at the same time. The writer clears the partition directory and writes "
                "`part-0.parquet`; the second process found the first one's file already there "
                "and wrote `part-0-1.parquet` with the same rows. Postgres stayed correct "
                "because the upsert is idempotent, but Parquet has no such guard, so every "
                "query over the files double-counts that day (79,104 rows instead of 39,552)."
            ),
            gold=("q46",),
            plants=("insight",),
        ),
        Turn(
            at="19:02",
            prompt="how do we prevent two loads at once",
            steps=(
                Edit(
                    "meterflow/load.py",
                    "def load_day(conn, day: date) -> LoadResult:\n",
                    "def load_day(conn, day: date) -> LoadResult:\n    got = conn.execute("
                    "\"SELECT pg_try_advisory_lock(hashtext('meterflow:load'), %s)\", "
                    "[day.toordinal()]).fetchone()[0]\n    if not got:\n        raise "
                    "LoadAlreadyRunning(day)\n",
                ),
            ),
            answer=(
                "We'll use a Postgres advisory lock per day at the start of every load, the "
                "same pattern as ledgerline's monthly invoice run: `SELECT "
                "pg_try_advisory_lock(hashtext('meterflow:load'), <day number>)` on the "
                "loader's connection, and if it returns false the load exits with `another "
                "load for 2026-10-19 is running`. The lock belongs to the session, so a "
                "crashed loader releases it when its connection closes, and there's no lock "
                "file to clean up. meterflow connects to Postgres directly, without pgbouncer, "
                "so session-level locks are safe here."
            ),
            gold=("q48",),
            plants=("decision", "cross_project"),
        ),
        Turn(
            at="19:25",
            prompt="also write the parquet partitions atomically",
            steps=(
                Edit(
                    "meterflow/parquet.py",
                    '    df.write_parquet(target / "part-0.parquet")',
                    '    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")\n    tmp.'
                    'mkdir()\n    df.write_parquet(tmp / "part-0.parquet")\n    fsync_dir(tmp)'
                    "\n    swap_dirs(tmp, target)",
                ),
                Shell(
                    "pytest tests/test_parquet.py -q && python -m meterflow.load --day 2026-10-19",
                    "....                                                      [100%]\n"
                    "4 passed in 0.52s\n2026-10-19: 39552 rows (0 new, 39552 unchanged), "
                    "partition reading_date=2026-10-19 replaced",
                ),
            ),
            answer=(
                "Partition writes are atomic now: the loader writes to "
                "`reading_date=2026-10-19.tmp-<pid>/part-0.parquet`, fsyncs, moves the old "
                "directory aside, renames the new one into place and only then deletes the old "
                "one. Readers see either the old or the new partition, never a mix. I also "
                "rewrote the 2026-10-19 partition, which has 39,552 rows again."
            ),
            gold=("q46",),
        ),
        Turn(
            at="19:44",
            prompt="test for the lock?",
            steps=(
                Shell(
                    "pytest tests/test_load_lock.py -q",
                    "..                                                        [100%]\n"
                    "2 passed in 1.21s",
                ),
            ),
            answer=(
                "`tests/test_load_lock.py` starts one load in a thread with a deliberately slow "
                "fake writer, starts a second load for the same day and asserts that it exits "
                "with `LoadAlreadyRunning`, while a load for a different day goes through. It "
                "runs against the test Postgres from `docker-compose.test.yml` and takes "
                "1.2 s."
            ),
        ),
    ),
)

DST_READINGS = Session(
    key="meterflow-dst-duplicates",
    tool="claude",
    project=METERFLOW,
    date="2026-10-26",
    ai_title="DST fall-back breaks the 25 October load",
    summary="The repeated 02:00 hour on 25 October breaks the upsert; resolving ambiguous "
    "local times by order; ends with a pointer to check ledgerline's billing periods.",
    turns=(
        Turn(
            at="09:10",
            prompt=(
                "the load for 2026-10-25 failed with `psycopg.errors.CardinalityViolation: ON "
                "CONFLICT DO UPDATE command cannot affect row a second time`. every other day "
                "works"
            ),
            steps=(
                Shell(
                    "iconv -f windows-1252 -t utf-8 /srv/meterflow/incoming/"
                    "export_2026-10-25.csv | grep '^DE0042000000000000000000000117;"
                    "25.10.2026 0[23]:' ",
                    "DE0042000000000000000000000117;25.10.2026 02:15;0,210;W\n"
                    "DE0042000000000000000000000117;25.10.2026 02:30;0,204;W\n"
                    "DE0042000000000000000000000117;25.10.2026 02:45;0,199;W\n"
                    "DE0042000000000000000000000117;25.10.2026 03:00;0,201;W\n"
                    "DE0042000000000000000000000117;25.10.2026 02:15;0,198;W\n"
                    "DE0042000000000000000000000117;25.10.2026 02:30;0,196;W\n"
                    "DE0042000000000000000000000117;25.10.2026 02:45;0,203;W\n"
                    "DE0042000000000000000000000117;25.10.2026 03:00;0,200;W",
                    description="Look at the 02:00-03:00 rows of one meter",
                ),
            ),
            answer=(
                "It's daylight saving time. On 25 October the clocks went back from 03:00 CEST "
                "to 02:00 CET, so the wall-clock hour from 02:00 to 03:00 happened twice, and "
                "the utility file has 100 rows per meter instead of 96, with 02:15, 02:30, "
                "02:45 and 03:00 appearing twice. Our parser localizes with "
                '`replace_time_zone("Europe/Berlin", ambiguous="earliest")`, so both copies '
                "of each repeated slot map to the same UTC instant, and a single `INSERT ... ON "
                "CONFLICT DO UPDATE` then tries to update the same row twice, which Postgres "
                "refuses. The root cause is local wall time without an offset: it is "
                "ambiguous once a year, and we picked one answer for both copies."
            ),
            gold=("q45", "q49"),
            plants=("insight",),
        ),
        Turn(
            at="09:32",
            prompt="how do we know which copy is which? the file has no offset",
            steps=(
                Edit(
                    "meterflow/parse.py",
                    '        pl.col("reading_local").dt.replace_time_zone("Europe/Berlin", '
                    'ambiguous="earliest")',
                    '        pl.col("reading_local").dt.replace_time_zone(\n            '
                    '"Europe/Berlin",\n            ambiguous=pl.when(occurrence == 0).then('
                    'pl.lit("earliest")).otherwise(pl.lit("latest")),\n            '
                    'non_existent="raise",\n        )',
                ),
                Shell(
                    "python -m meterflow.load --day 2026-10-25",
                    "2026-10-25: 41200 rows (41200 new), partition reading_date=2026-10-25 written",
                    description="Reload 25 October",
                ),
            ),
            answer=(
                "By order. Within each meter the file is sorted by time, so the first 02:15 is "
                "still summer time (00:15 UTC) and the second is winter time (01:15 UTC). "
                "polars' `replace_time_zone` accepts an expression for `ambiguous`, so the "
                "parser now numbers repeated wall times per meter with "
                '`pl.int_range(pl.len()).over("meter_id", "reading_local")` and passes '
                '`ambiguous=pl.when(occurrence == 0).then(pl.lit("earliest")).otherwise('
                'pl.lit("latest"))`. We\'ll store only the UTC `reading_ts` and treat local '
                "time as presentation. The reload of "
                "2026-10-25 inserted 41,200 rows (412 meters x 100 slots) without conflicts."
            ),
            gold=("q45",),
            plants=("decision",),
        ),
        Turn(
            at="09:55",
            prompt="what about spring forward in march, when 02:00-03:00 doesn't exist",
            answer=(
                "On 29 March 2026 the file has 92 slots per meter without 02:15 to 03:00, so "
                "nothing is ambiguous; but `replace_time_zone` would have to decide what to do "
                "if a buggy export ever contained a non-existent time. The parser now passes "
                '`non_existent="raise"` explicitly, and I added fixtures for both transition '
                "days: 2026-03-29 (92 slots, a 23-hour day) and 2026-10-25 (100 slots, a 25-hour "
                "day). Both produce strictly increasing UTC timestamps per meter."
            ),
        ),
        Turn(
            at="10:14",
            prompt="check the dashboard's hourly chart for oct 25",
            steps=(
                Search(
                    "date_trunc",
                    "dashboards/",
                    'dashboards/consumption.json:88:  "rawSql": "SELECT date_trunc(\'hour\', '
                    "reading_ts AT TIME ZONE 'Europe/Berlin') AS t, sum(kwh) FROM readings "
                    '..."',
                ),
            ),
            answer=(
                "The hourly chart for 2026-10-25 now has 25 bars. The Grafana query grouped by "
                "`date_trunc('hour', reading_ts AT TIME ZONE 'Europe/Berlin')`, which merged "
                "the two 02:00 hours into one bar with double consumption. It now groups by "
                "the UTC hour and labels each bar with the local time plus offset (`02:00 +02` "
                "and `02:00 +01`), so the repeated hour is visible and every bar has four "
                "readings."
            ),
        ),
        Turn(
            at="10:31",
            prompt="add this to the project notes",
            steps=(
                Write(
                    "docs/NOTES.md",
                    "## Time zones\n\n- Store timestamptz in UTC only.\n- Localize source "
                    "wall times at parse time with an explicit policy for ambiguous and "
                    "non-existent times.\n- Never group by local hour without showing the "
                    "offset.\n- Test both DST transition days every year.\n",
                ),
            ),
            answer=(
                "Added a 'Time zones' section to `docs/NOTES.md`: store `timestamptz` in UTC "
                "only; localize source wall times at parse time with an explicit policy for "
                "ambiguous times (order within a meter) and non-existent ones (raise); never "
                "group by local hour in SQL without showing the offset; test both transition "
                "days every year. Worth checking ledgerline for the same mistake: its billing "
                "periods are built from local dates too, and the October invoices are "
                "generated on 1 November, after the clocks changed."
            ),
            gold=("q49",),
            plants=("insight", "cross_project"),
        ),
    ),
)

QUALITY_CHECKS = Session(
    key="meterflow-quality-checks",
    tool="claude",
    project=METERFLOW,
    date="2026-10-30",
    ai_title="Data quality checks after each load",
    summary="Plain SQL checks instead of a framework; negative kWh turns out to be PV feed-in.",
    turns=(
        Turn(
            at="14:00",
            prompt=(
                "I want data quality checks after each load. great expectations? soda? "
                "something lighter?"
            ),
            answer=(
                "Something lighter: we'll write the checks as plain SQL queries in "
                "`meterflow/checks.py` that run at the end of each load and fail it if any "
                "returns rows. Great Expectations brings a large dependency tree, its own "
                "config directory and an HTML docs site for what are currently six checks, and "
                "Soda needs its own YAML dialect and CLI. Each check is a name, an SQL string "
                "and a severity (`error` fails the load, `warn` only logs), for example "
                "`slots_per_meter` (every meter has 92, 96 or 100 slots for the day) and "
                "`no_future_readings`."
            ),
            plants=("decision",),
        ),
        Turn(
            at="14:25",
            prompt="write them",
            steps=(
                Write(
                    "meterflow/checks.py",
                    'CHECKS = [\n    Check("slots_per_meter", "error", """\n        SELECT '
                    "meter_id, count(*) FROM readings WHERE reading_ts >= %(start)s AND "
                    "reading_ts < %(end)s\n        GROUP BY meter_id HAVING count(*) NOT IN "
                    '(92, 96, 100)\n    """),\n]\n',
                ),
                Shell(
                    "python -m meterflow.checks --since 2026-09-30",
                    "slots_per_meter ......... ok\nno_future_readings ...... ok\n"
                    "no_negative_kwh ......... FAIL (3 meters, 1208 rows)\nmax_kwh_per_slot "
                    "........ ok\ngaps_recorded ........... ok\ngridpulse_sites_present . ok",
                    description="Run the checks over the last 30 days",
                ),
            ),
            answer=(
                "Added six checks: `slots_per_meter` (92, 96 or 100 depending on DST), "
                "`no_future_readings`, `no_negative_kwh`, `max_kwh_per_slot` (over 50 kWh per "
                "15 minutes is a warning), `gaps_recorded` (every missing slot has a "
                "`reading_gaps` row) and `gridpulse_sites_present` (all 58 solar sites "
                "delivered). Over the last 30 days everything passes except "
                "`no_negative_kwh`: 3 meters have negative values on sunny days."
            ),
        ),
        Turn(
            at="14:43",
            prompt="negative kwh? how",
            steps=(
                Shell(
                    'psql meterflow -c "select meter_id, min(kwh), count(*) filter (where kwh '
                    '< 0) from readings where kwh < 0 group by 1"',
                    "            meter_id            |  min   | count\n"
                    "--------------------------------+--------+-------\n"
                    " DE0042000000000000000000000051 | -1.812 |   417\n"
                    " DE0042000000000000000000000266 | -1.204 |   391\n"
                    " DE0042000000000000000000000390 | -0.955 |   400",
                    description="Inspect the negative readings",
                ),
            ),
            answer=(
                "Turns out those 3 meters (...051, ...266 and ...390) are bidirectional meters at "
                "houses with rooftop PV. The utility exports the net value per slot, so when the "
                "panels feed in more than the house uses, the reading goes negative, down to -1.8 "
                "kWh per slot around noon. It's real data, not an error. We should store import "
                "and export separately instead of clipping: the CSV has an `OBIS` column we've "
                "been ignoring, where `1.8.0` is import and `2.8.0` is export."
            ),
            gold=("q47",),
            plants=("insight",),
        ),
        Turn(
            at="15:10",
            prompt="ok store both",
            steps=(
                Shell(
                    "alembic upgrade head && python -m meterflow.load --meters "
                    "DE0042000000000000000000000051,DE0042000000000000000000000266,"
                    "DE0042000000000000000000000390 --from 2026-08-21 --to 2026-10-29",
                    "INFO  [alembic.runtime.migration] Running upgrade 0006 -> 0007, reading "
                    "direction\nreloaded 3 meters x 70 days: 20160 export rows added",
                    description="Migrate and reload the bidirectional meters",
                ),
            ),
            answer=(
                "`readings` now has a `direction` column (`import` or `export`, from the OBIS "
                "code), and the primary key became `(meter_id, reading_ts, direction)` in "
                "migration `0007_reading_direction`. Existing rows were backfilled as "
                "`import`, and reloading the 3 bidirectional meters from 21 August added "
                "20,160 export rows. `kwh` is never negative now, so `no_negative_kwh` is an "
                "`error` check again, and the dashboards sum only `import` unless the new "
                "'show feed-in' toggle is on."
            ),
            gold=("q47",),
            plants=("decision",),
        ),
    ),
)

OCTOBER_BACKFILL = Session(
    key="meterflow-october-backfill",
    tool="codex",
    project=METERFLOW,
    date="2026-11-04",
    summary="Re-running the October backfill; the file ends while the last turn is still "
    "running (unfinished).",
    turns=(
        Turn(
            at="20:30",
            prompt=(
                "now that DST handling is fixed, I want to re-run the full october backfill for "
                "all 412 meters. how long will it take and is it safe while the nightly timer "
                "is active?"
            ),
            answer=(
                "It's safe: every day takes its advisory lock, so if the 02:30 timer starts the "
                "same day it exits with `another load ... is running`, and days don't depend on "
                "each other. The upsert makes reloading idempotent and partitions are swapped "
                "atomically. Parsing and loading a month took about 40 s locally, so the time on "
                "the server is mostly the 31 SFTP downloads and the GridPulse pulls (about 2 "
                "minutes 20 seconds per day): expect roughly 25 minutes."
            ),
        ),
        Turn(
            at="20:41",
            prompt="do a dry run for oct 1-3 first",
            steps=(
                Shell(
                    "python -m meterflow.backfill --from 2026-10-01 --to 2026-10-03 --dry-run",
                    "2026-10-01: 39552 rows parsed, 0 new, 39552 unchanged\n2026-10-02: 39552 "
                    "rows parsed, 0 new, 39552 unchanged\n2026-10-03: 39552 rows parsed, 12 "
                    "new, 39540 unchanged",
                ),
            ),
            answer=(
                "Dry run for 1 to 3 October: the 1st and 2nd would change nothing (39,552 rows "
                "each, all identical), and the 3rd would add 12 rows, the slots that the "
                "utility's correction file of 12 October filled for meter ...388. No existing "
                "value would change, so the DST fix doesn't touch these days, as expected; "
                "only 25 October should differ."
            ),
        ),
        Turn(
            at="20:52",
            prompt="good, run the whole month for real now",
            steps=(
                Say("Starting the backfill for 2026-10-01 to 2026-10-31; it takes ~25 minutes."),
                Shell("python -m meterflow.backfill --from 2026-10-01 --to 2026-10-31", None),
            ),
            unfinished=True,
        ),
    ),
)

SESSIONS = (
    INGEST_DESIGN,
    GRIDPULSE,
    AGGREGATION_OOM,
    LOCATIONS_AND_TIMER,
    NIGHTLY_SUMMARY,
    BACKFILL_LOCK,
    DST_READINGS,
    QUALITY_CHECKS,
    OCTOBER_BACKFILL,
)
