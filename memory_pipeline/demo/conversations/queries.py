"""Retrieval gold queries: what the user would later ask an agent about this work.

Queries are paraphrases, not copies of the turn text. The turns that must be found are tagged in
the conversation modules with `gold=("qNN", ...)`; `build_corpus.py` resolves the tags into
`gold.jsonl`. A few queries are keyword-heavy (error messages, identifiers), a few purely semantic.
"""

from __future__ import annotations

from memory_pipeline.demo.spec import Query

QUERIES: dict[str, Query] = {
    "q01": Query("why did we stop using Redis for rate limiting?", "decision"),
    "q02": Query("what was the fix for the flaky migration test", "insight"),
    "q03": Query("how do I rotate the home-lab VPN keys", "procedure"),
    "q04": Query(
        "why did logslice go back to buffered reads instead of memory mapping", "decision"
    ),
    "q05": Query("SIGBUS bus error signal 7 after logrotate copytruncate", "insight"),
    "q06": Query("how much faster was the memory-mapped reader than BufReader", "fact"),
    "q07": Query("which date/time crate does logslice use and why not chrono", "decision"),
    "q08": Query("are the --since and --until bounds inclusive or exclusive", "fact"),
    "q09": Query("unit test green on my machine but red in CI because of the time zone", "insight"),
    "q10": Query("how are the prebuilt release binaries of the Rust CLI produced", "procedure"),
    "q11": Query("why was the static Alpine build so much slower than the glibc one", "insight"),
    "q12": Query("how did we make the release binary smaller", "decision"),
    "q13": Query("build an ARM binary for the raspberry pi without docker", "procedure"),
    "q14": Query('prepared statement "_pg3_3" does not exist pgbouncer', "insight"),
    "q15": Query(
        "keep the monthly invoice run from executing twice with two beat pods", "decision"
    ),
    "q16": Query("should API throttling be keyed by client address or by credential", "correction"),
    "q17": Query("how do we avoid processing the same Stripe event twice", "decision"),
    "q18": Query("what if payment webhooks come in the wrong order", "insight"),
    "q19": Query(
        "IntegrityError billing_processedstripeevent_event_id_key showing up in Sentry", "insight"
    ),
    "q20": Query("proration amounts off by one cent compared to Stripe", "correction"),
    "q21": Query(
        "what happens to money when a customer moves to a cheaper plan mid-cycle", "decision"
    ),
    "q22": Query("customers billed twice for the same hour after the clocks changed", "insight"),
    "q23": Query(
        "how many customers got credit notes for the daylight saving mistake and how much", "fact"
    ),
    "q24": Query("background jobs lost when the worker process was killed", "insight"),
    "q25": Query("why did the worker sending invoice emails run out of memory", "insight"),
    "q26": Query("admin stylesheet stale after the Django upgrade", "insight"),
    "q27": Query("which Terraform provider do we use for Proxmox", "decision"),
    "q28": Query("where is the home-lab terraform state kept and how is it locked", "decision"),
    "q29": Query("unable to find storage 'local-lvm' when cloning", "insight"),
    "q30": Query("adopt an existing VM into terraform without recreating it", "procedure"),
    "q31": Query("is Glacier Deep Archive a good idea for the restic repository", "decision"),
    "q32": Query("how do we verify the NAS backups can actually be restored", "procedure"),
    "q33": Query("waiting for record to fully propagate caddy", "insight"),
    "q34": Query("pi-hole local DNS entries disappear after an update", "insight"),
    "q35": Query("terraform plan keeps showing the same disk change every run", "insight"),
    "q36": Query("simulate a degraded zfs pool to test alerting", "procedure"),
    "q37": Query("which ansible roles still used apt_key and what replaced it", "fact"),
    "q38": Query("quirks of the utility's CSV export format", "fact"),
    "q39": Query("how does meterflow make reloading a day safe to repeat", "decision"),
    "q40": Query("solar API still returning 429 too many requests", "insight"),
    "q41": Query("the monthly aggregation job was killed for using too much memory", "correction"),
    "q42": Query("should meterflow use DuckDB", "decision"),
    "q43": Query("nightly job skipped because the server was rebooting", "decision"),
    "q44": Query("cleaning up messy meter address strings with a language model", "decision"),
    "q45": Query(
        "load fails with CardinalityViolation: ON CONFLICT cannot affect row a second time",
        "insight",
    ),
    "q46": Query("same rows twice in a parquet partition after overlapping loads", "insight"),
    "q47": Query("why do some meters report negative consumption", "insight"),
    "q48": Query("where have we used Postgres advisory locks", "fact"),
    "q49": Query("daylight saving time bugs we hit in different projects", "insight"),
    "q50": Query("should the database run inside the kubernetes cluster", "decision"),
    "q51": Query("app lost its data after the pod restarted", "insight"),
    "q52": Query(
        "which backup tool for point-in-time recovery of the home-lab Postgres", "decision"
    ),
    "q53": Query("compare rate limiting algorithms and their tradeoffs", "fact"),
    "q54": Query("what should the API do when the rate limiter's database is down", "decision"),
    "q55": Query("Broken pipe error when piping the CLI output into head", "insight"),
    "q56": Query("inotify or polling for following a growing file", "decision"),
    "q57": Query("small cache for timestamp parsing beat an LRU", "insight"),
    "q58": Query("where was logslice spending its time before the optimisations", "insight"),
    "q59": Query("does the GitHub release workflow need a personal access token", "decision"),
    "q60": Query("what did the first version of the API rate limiter use and why", "decision"),
}
