"""ledgerline: the Django billing service at work (mostly Claude Code sessions)."""

from __future__ import annotations

from memory_pipeline.demo.conversations.projects import LEDGERLINE
from memory_pipeline.demo.spec import Edit, Read, Say, Search, Session, Shell, Turn, Write

# A clearly fake database URL with a password, pasted from CI output (redacted at capture).
FAKE_DATABASE_URL = "postgres://ledger_app:Xq7-demo-Pa55word@ci-db.internal:5432/ledgerline_test"

DJANGO_UPGRADE = Session(
    key="ledgerline-django52",
    tool="codex",
    project=LEDGERLINE,
    date="2026-09-24",
    branch="django-5.2",
    summary="Django 4.2 -> 5.2: removed storage settings silently ignored, a system check.",
    turns=(
        Turn(
            at="08:35",
            prompt=(
                "upgrade ledgerline from django 4.2 to 5.2. look at the deprecation warnings first"
            ),
            steps=(
                Shell(
                    "python -Wd manage.py check 2>&1 | grep Warning | sort | uniq -c",
                    "      1 RemovedInDjango50Warning: The USE_L10N setting is deprecated. "
                    "Starting with Django 5.0, localized formatting of data will always be "
                    "enabled.\n      1 RemovedInDjango51Warning: The DEFAULT_FILE_STORAGE "
                    "setting is deprecated. Use STORAGES instead.\n      1 "
                    "RemovedInDjango51Warning: The STATICFILES_STORAGE setting is deprecated. "
                    "Use STORAGES instead.",
                ),
                Edit(
                    "requirements/base.in",
                    "Django==4.2.24",
                    "Django==5.2.7",
                ),
                Shell("pytest -q", "774 passed, 3 skipped in 118.52s"),
            ),
            answer=(
                "On 4.2 with `-Wd` there are three deprecations to fix first: `USE_L10N` "
                "(removed in 5.0; localized formatting is always on, so the setting just goes), "
                "and `DEFAULT_FILE_STORAGE` plus `STATICFILES_STORAGE` (removed in 5.1, replaced "
                "by the `STORAGES` dict). I fixed all three on 4.2 so the upgrade itself is a "
                "pure version bump, then moved to `Django==5.2.7` together with "
                "`django-storages 1.14.6` and `djangorestframework 3.16.1`, which support 5.2. "
                "`manage.py check` is clean and the suite passes (774 tests)."
            ),
        ),
        Turn(
            at="11:10",
            prompt=(
                "deployed to staging and the admin looks broken, browsers still get the old CSS"
            ),
            steps=(
                Search(
                    "STATICFILES_STORAGE|STORAGES",
                    "config/settings/",
                    "config/settings/base.py:141:STORAGES = {\n"
                    'config/settings/staging.py:22:STATICFILES_STORAGE = "django.contrib.'
                    'staticfiles.storage.ManifestStaticFilesStorage"',
                ),
            ),
            answer=(
                "That was the storage settings: `config/settings/staging.py` still sets "
                '`STATICFILES_STORAGE = "...ManifestStaticFilesStorage"`, which Django 5.1+ '
                "silently ignores. So `collectstatic` wrote files without content hashes and "
                "browsers kept serving their cached `admin/css/base.css`. Lesson learned: a "
                "removed setting doesn't raise, it just stops working. I moved the manifest "
                'storage into `STORAGES["staticfiles"]` in the base settings, deleted the '
                "staging override and re-ran `collectstatic`; the admin now loads "
                "`base.6d1d4c8a2b3e.css`."
            ),
            gold=("q26",),
            plants=("insight",),
        ),
        Turn(
            at="11:32",
            prompt="add a check so removed settings can't sneak back in",
            steps=(
                Write(
                    "billing/checks.py",
                    "from django.conf import settings\nfrom django.core.checks import Error, "
                    'register\n\nREMOVED = ("STATICFILES_STORAGE", "DEFAULT_FILE_STORAGE", '
                    '"USE_L10N", "DEFAULT_HASHING_ALGORITHM")\n\n\n@register()\ndef '
                    'removed_settings(app_configs, **kwargs):\n    return [Error(f"{name} was '
                    'removed from Django and is ignored", id="ledgerline.E001") for name in '
                    "REMOVED if hasattr(settings, name)]\n",
                ),
            ),
            answer=(
                "Added a system check `removed_settings` in `billing/checks.py` that reports "
                "error `ledgerline.E001` when any of `STATICFILES_STORAGE`, "
                "`DEFAULT_FILE_STORAGE`, `USE_L10N` or `DEFAULT_HASHING_ALGORITHM` is defined. "
                "We'll keep it as a Django system check rather than a test because "
                "`manage.py check --deploy` runs in the deploy pipeline against the real "
                "staging and production settings modules, which the tests never import. It "
                "found nothing else after the fix."
            ),
            plants=("decision",),
        ),
        Turn(
            at="11:50",
            prompt="ok, plan the prod rollout",
            answer=(
                "Rollout plan: (1) the upgrade adds no migrations of ours, so it goes out as a "
                "normal rolling deploy; (2) the release job runs `manage.py check --deploy` and "
                "`collectstatic` before traffic switches; (3) watch Sentry and the 5xx panel "
                "for 30 minutes; (4) rollback is redeploying image `ledgerline:5c0e2a1`, since "
                "nothing in the database changes. I put it in the release calendar for Tuesday "
                "29 September, 07:00, before the EU working day starts."
            ),
        ),
    ),
)

REDIS_LIMITER = Session(
    key="ledgerline-rate-limit-redis",
    tool="claude",
    project=LEDGERLINE,
    date="2026-09-22",
    branch="api-rate-limits",
    ai_title="Per-API-key rate limiting with Redis",
    summary="Rate limiting the public API with a Redis fixed window; corrected from per-IP to "
    "per-API-key.",
    turns=(
        Turn(
            at="10:10",
            prompt=(
                "we need rate limiting on the public invoices API before the Acme integration "
                "goes live. 100 requests per minute, return 429 with Retry-After. what's the "
                "simplest thing that works here?"
            ),
            steps=(
                Say("Let me check what caching and Redis setup the project already has."),
                Search(
                    "CACHES|CELERY_BROKER_URL|django_redis",
                    "config/settings/base.py",
                    '118:CELERY_BROKER_URL = env("CELERY_BROKER_URL", '
                    'default="redis://redis:6379/0")\n'
                    "126:CACHES = {\n"
                    '128:        "BACKEND": "django_redis.cache.RedisCache",',
                ),
            ),
            answer=(
                "We'll use Redis for the rate limiter: you already run Redis 7 for Celery "
                "(`CELERY_BROKER_URL=redis://redis:6379/0`) and `django-redis` is the default "
                "cache, so a fixed-window counter is one `INCR` plus `EXPIRE` per request, with "
                "no new infrastructure and sub-millisecond latency. The key is "
                "`rl:{bucket}:{window}` with `window = int(time.time() // 60)`, and a 429 "
                "carries `Retry-After` with the seconds left in the window. A fixed window "
                "allows a burst of up to 200 requests across a window boundary; for a 100/min "
                "limit in front of a Postgres-backed API that's acceptable, and much simpler "
                "than a sliding log."
            ),
            gold=("q60",),
            plants=("decision", "contradiction"),
        ),
        Turn(
            at="10:24",
            prompt="sounds good, implement it as middleware for /api/v1/",
            steps=(
                Write(
                    "billing/api/ratelimit.py",
                    "import time\n\nfrom django.http import JsonResponse\nfrom django_redis "
                    "import get_redis_connection\n\n\nclass RateLimitMiddleware:\n    def "
                    "__init__(self, get_response):\n        self.get_response = get_response\n"
                    '        self.redis = get_redis_connection("default")\n',
                ),
                Edit(
                    "config/settings/base.py",
                    '    "django.contrib.auth.middleware.AuthenticationMiddleware",',
                    '    "django.contrib.auth.middleware.AuthenticationMiddleware",\n'
                    '    "billing.api.ratelimit.RateLimitMiddleware",',
                ),
                Shell(
                    "pytest billing/api/tests/test_ratelimit.py -q",
                    "....                                                      [100%]\n"
                    "4 passed in 0.61s",
                    description="Run the rate limit tests",
                ),
            ),
            answer=(
                "Added `RateLimitMiddleware` in `billing/api/ratelimit.py`: it only applies to "
                "paths under `/api/v1/`, increments `rl:{client_ip}:{window}` in a pipeline "
                '(`INCR`, `EXPIRE 61`) and returns `JsonResponse({"detail": "rate limit '
                'exceeded"}, status=429)` with `Retry-After`. It runs after '
                "`AuthenticationMiddleware`, and the limit comes from `settings.API_RATE_LIMIT "
                '= "100/m"`. Four tests with fakeredis pass.'
            ),
        ),
        Turn(
            at="10:37",
            prompt=(
                "No, that's not what I meant — the limit has to be per API key, not per client "
                "IP. Acme's whole office sits behind one NAT address, and two of our customers "
                "call us from the same AWS NAT gateway."
            ),
            steps=(
                Edit(
                    "billing/api/ratelimit.py",
                    '        bucket = request.META["REMOTE_ADDR"]',
                    "        api_key = ApiKey.objects.get_by_prefix(request)\n        if api_key "
                    "is None:\n            return self.get_response(request)  # 401 from auth\n"
                    '        bucket = f"key:{api_key.id}"',
                ),
                Shell(
                    "pytest billing/api/tests/test_ratelimit.py -q",
                    "......                                                    [100%]\n"
                    "6 passed in 0.70s",
                    description="Run the rate limit tests",
                ),
            ),
            answer=(
                "You're right: keying on `REMOTE_ADDR` makes customers behind a shared NAT "
                "throttle each other. The bucket is now the API key: the middleware reads the "
                "`Authorization: Api-Key ...` header, resolves it with "
                "`ApiKey.objects.get_by_prefix()` (the lookup DRF authentication uses, cached "
                "for 60 s) and counts in `rl:key:{api_key.id}:{window}`. Requests without a "
                "valid key aren't limited here because authentication rejects them with 401 "
                "anyway. I replaced the IP tests with ones where two keys share one IP and are "
                "limited independently."
            ),
            gold=("q16",),
            plants=("correction",),
        ),
        Turn(
            at="11:02",
            prompt="some customers will need higher limits. Acme wants 600/min for their sync job",
            steps=(
                Shell(
                    "python manage.py makemigrations billing -n apikey_rate_limit_per_minute",
                    "Migrations for 'billing':\n  billing/migrations/"
                    "0047_apikey_rate_limit_per_minute.py\n    + Add field "
                    "rate_limit_per_minute to apikey",
                    description="Create the migration",
                ),
            ),
            answer=(
                "Added a nullable `rate_limit_per_minute` on `ApiKey` (migration "
                "`0047_apikey_rate_limit_per_minute`); the middleware uses it when set and "
                "falls back to `settings.API_RATE_LIMIT` (100/min) otherwise. We'll store "
                "overrides on the key rather than on the customer, because Acme uses separate "
                "keys for their sync job and their dashboard and only the sync job needs 600. "
                "I set Acme's sync key to 600 in the Django admin on staging."
            ),
            plants=("decision",),
        ),
        Turn(
            at="11:20",
            prompt="how do I see who's getting throttled?",
            steps=(
                Edit(
                    "billing/metrics.py",
                    "API_REQUESTS = Counter(",
                    'API_RATE_LIMITED = Counter(\n    "ledgerline_api_rate_limited_total", '
                    '"Requests rejected by the rate limiter", ["customer"]\n)\n\n'
                    "API_REQUESTS = Counter(",
                ),
            ),
            answer=(
                "Every 429 now logs `rate_limited api_key_id=... customer_id=... limit=100` at "
                "INFO on the existing `billing.api` logger, so it shows up in Loki with "
                '`{app="ledgerline"} |= "rate_limited"`. There is also a Prometheus counter '
                "`ledgerline_api_rate_limited_total{customer}` in `billing/metrics.py` next to "
                "the request counters, and Grafana can alert when one customer is throttled for "
                "more than 5 minutes in a row."
            ),
        ),
        Turn(
            at="11:48",
            prompt="ok ship it to staging",
            steps=(
                Shell(
                    "git push origin api-rate-limits && make deploy-staging",
                    "To gitlab.com:brightlane/ledgerline.git\n * [new branch]      "
                    "api-rate-limits -> api-rate-limits\ndeploy: image ledgerline:2f6c1d0 "
                    "rolled out to staging (3/3 pods ready)",
                    description="Push and deploy to staging",
                ),
            ),
            answer=(
                "Pushed `api-rate-limits` and deployed it to staging with `make deploy-staging` "
                "(image `ledgerline:2f6c1d0`). The smoke test hit `/api/v1/invoices/` 120 times "
                "with a default key: 100 responses with 200 and 20 with 429 and `Retry-After: "
                "17`; Acme's sync key got 120 times 200. Redis memory grew by about 40 KB for "
                "the counters, as expected."
            ),
        ),
    ),
)

STRIPE_WEBHOOKS = Session(
    key="ledgerline-stripe-webhooks",
    tool="claude",
    project=LEDGERLINE,
    date="2026-09-29",
    branch="stripe-webhooks",
    ai_title="Idempotent Stripe webhook handling",
    summary="Duplicate receipts from Stripe retries: a processed-events table, out-of-order "
    "events; a follow-up two days later in the same session.",
    turns=(
        Turn(
            at="14:20",
            prompt=(
                "a customer got two receipts for one payment yesterday: invoice INV-2026-0913 had "
                "its `invoice.paid` handler run twice and two receipts went out. Stripe's "
                "dashboard shows the event was delivered twice because our endpoint timed out the "
                "first time. how do we make the webhooks idempotent?"
            ),
            steps=(
                Read(
                    "billing/webhooks/stripe.py",
                    "@csrf_exempt\ndef stripe_webhook(request):\n    event = stripe.Webhook"
                    '.construct_event(request.body, request.META["HTTP_STRIPE_SIGNATURE"], '
                    "settings.STRIPE_WEBHOOK_SECRET)\n    handler = HANDLERS.get(event.type)\n"
                    "    if handler:\n        handler(event)\n    return HttpResponse(status=200)",
                ),
            ),
            answer=(
                "The root cause is that the handler isn't idempotent: Stripe retries any delivery "
                "that doesn't get a 2xx in time, and our handler took 14 s (it renders the PDF "
                "receipt synchronously), so the first attempt was still running when the retry "
                "arrived. Stripe only promises at-least-once delivery, so duplicates will keep "
                "happening. We'll use a `processed_stripe_events` table that records every "
                "processed `event.id` under a unique constraint, and do that insert and the "
                "business logic in one `transaction.atomic()` block: a duplicate fails the insert "
                "and we return 200 without doing anything. We should also move the PDF rendering "
                "to Celery so the endpoint answers in well under a second."
            ),
            gold=("q17",),
            plants=("decision", "insight"),
        ),
        Turn(
            at="14:41",
            prompt="do both",
            steps=(
                Write(
                    "billing/migrations/0044_processedstripeevent.py",
                    "from django.db import migrations, models\n\n\nclass Migration(migrations."
                    'Migration):\n    dependencies = [("billing", "0043_invoice_pdf_version'
                    '")]\n    operations = [\n        migrations.CreateModel(\n            '
                    'name="ProcessedStripeEvent",\n            fields=[\n                '
                    '("event_id", models.CharField(max_length=255, unique=True)),\n',
                ),
                Edit(
                    "billing/webhooks/stripe.py",
                    "    handler = HANDLERS.get(event.type)\n    if handler:\n        "
                    "handler(event)",
                    "    try:\n        with transaction.atomic():\n            "
                    "ProcessedStripeEvent.objects.create(event_id=event.id, type=event.type)\n"
                    "            dispatch(event)\n    except IntegrityError:\n        "
                    'logger.exception("duplicate stripe event %s", event.id)',
                ),
                Shell(
                    "pytest billing/webhooks -q",
                    "...........                                               [100%]\n"
                    "11 passed in 1.92s",
                    description="Run webhook tests",
                ),
            ),
            answer=(
                "Added the `ProcessedStripeEvent` model (`event_id` unique, `type`, "
                "`received_at`) in migration `0044_processedstripeevent`. `stripe_webhook` "
                "verifies the signature, then creates the `ProcessedStripeEvent` row and "
                "dispatches inside `transaction.atomic()`; on `IntegrityError` it logs the "
                "duplicate and returns 200. Receipt rendering moved to "
                "`send_receipt.delay_on_commit(invoice_id)`, so the task only runs after the "
                "transaction commits. The endpoint's p95 on staging dropped from 14.2 s to "
                "180 ms, and a new test replays the same event twice and asserts one receipt."
            ),
            gold=("q17",),
        ),
        Turn(
            at="15:05",
            prompt=(
                "we also saw invoice.paid arrive before invoice.finalized once. does that matter?"
            ),
            answer=(
                "It does. Turns out Stripe doesn't guarantee event order, and retries make "
                "reordering more likely. Our `invoice.paid` handler assumed the local `Invoice` "
                "already had the `number` that `invoice.finalized` sets, so out of order it saved "
                "a paid invoice without a number. The handler now ignores the order entirely: for "
                "`invoice.*` events it re-fetches the invoice with `stripe.Invoice.retrieve(id)` "
                "and applies its current state, so whichever event arrives first brings the "
                "invoice fully up to date and the later one is a no-op. That's one API call per "
                "event, nothing at ~300 invoice events a day."
            ),
            gold=("q18",),
            plants=("insight",),
        ),
        Turn(
            at="15:22",
            prompt="how long do we need to keep the processed event ids?",
            answer=(
                "Stripe retries a failed delivery for up to 3 days in live mode, so the "
                "dedup table needs at least that; we'll keep 30 days to also cover manual "
                "resends from the dashboard. I added a daily Celery beat task "
                "`prune_processed_stripe_events` that deletes rows older than 30 days in "
                "batches of 5,000. At current volume the table holds about 9,000 rows at any "
                "time."
            ),
            plants=("decision",),
        ),
        Turn(
            at="15:40",
            prompt="write a runbook entry for when webhooks fail",
            steps=(
                Write(
                    "docs/runbooks/stripe-webhooks.md",
                    "# Stripe webhooks\n\n## Replaying a failed delivery\n\n```sh\nstripe "
                    "events resend evt_... --webhook-endpoint we_...\n```\n\nReplays are safe: "
                    "processed event ids are recorded in billing_processedstripeevent.\n",
                ),
            ),
            answer=(
                "Added `docs/runbooks/stripe-webhooks.md`: where to find failed deliveries in "
                "the Stripe dashboard (Developers, Webhooks, the endpoint, Failed), how to "
                "replay one with `stripe events resend evt_... --webhook-endpoint we_...`, and "
                "why replays are safe now (the idempotency table). It also lists the two "
                "alerts: `StripeWebhook5xx` (any 5xx within 10 minutes) and "
                "`StripeWebhookLatencyHigh` (p95 above 2 s)."
            ),
        ),
        Turn(
            at="2026-10-01 09:15",
            prompt=(
                "morning. overnight Sentry got 38 of these: `IntegrityError: duplicate key value "
                'violates unique constraint "billing_processedstripeevent_event_id_key"`. I '
                "thought we handled that?"
            ),
            steps=(
                Search(
                    "duplicate stripe event",
                    "billing/webhooks/",
                    'billing/webhooks/stripe.py:48:        logger.exception("duplicate stripe '
                    'event %s", event.id)',
                ),
            ),
            answer=(
                "We do handle it; the 38 events are duplicates being skipped correctly. The "
                "handler logs them with `logger.exception(...)`, and sentry-sdk's logging "
                "integration turns every `logger.exception` into an error event with the "
                "`IntegrityError` attached. They line up with a burst of Stripe retries at "
                '02:10. I changed the call to `logger.info("duplicate stripe event %s", '
                "event.id)`, which Sentry only keeps as a breadcrumb, and added a counter "
                "`ledgerline_stripe_duplicate_events_total` so we still see the volume."
            ),
            gold=("q19",),
            plants=("insight",),
        ),
        Turn(
            at="09:34",
            prompt="and why did stripe retry at all? the db failover was only 40 seconds",
            answer=(
                "During the 40-second failover every webhook request failed with a 500 "
                "(`OperationalError: server closed the connection unexpectedly`), and Stripe "
                "retried those 38 events on its own backoff about an hour later, which is why "
                "they arrived as a burst at 02:10. Nothing was lost: 36 of the retries were "
                "already recorded and skipped, and the 2 new `invoice.paid` events were "
                "applied. I also set `CONN_HEALTH_CHECKS = True`, so Django stops reusing dead "
                "connections right after a failover."
            ),
        ),
    ),
)

FLAKY_MIGRATION = Session(
    key="ledgerline-flaky-migration",
    tool="codex",
    project=LEDGERLINE,
    date="2026-10-05",
    branch="fix/flaky-0042",
    summary="A migration test that fails one run in five: unordered queryset and the live "
    "model in a migration. The user pastes a database URL with a password.",
    turns=(
        Turn(
            at="11:00",
            prompt=(
                "test_0042_backfill_invoice_numbers fails maybe 1 in 5 runs on CI with "
                "`AssertionError: 'INV-2026-0002' != 'INV-2026-0001'`. here's the CI env in "
                f"case it matters: DATABASE_URL={FAKE_DATABASE_URL}"
            ),
            steps=(
                Read(
                    "billing/migrations/0042_backfill_invoice_numbers.py",
                    "from django.db import migrations\n\nfrom billing.models import Invoice\n\n\n"
                    "def backfill(apps, schema_editor):\n    seq = 1\n    for invoice in "
                    "Invoice.objects.filter(number__isnull=True):\n        invoice.number = "
                    'f"INV-{invoice.created_at.year}-{seq:04d}"\n        invoice.save('
                    'update_fields=["number"])\n        seq += 1\n',
                ),
            ),
            answer=(
                "First: that `DATABASE_URL` contains the CI database password. It's only the "
                "CI database, but it's now in this chat, so rotate it (`ALTER ROLE ledger_app "
                "PASSWORD ...` and update the CI variable). As for the test: "
                "`0042_backfill_invoice_numbers` numbers invoices while iterating "
                "`Invoice.objects.filter(number__isnull=True)` without an `order_by()`, so the "
                "numbering follows whatever order Postgres returns the rows in, while the test "
                "assumes creation order."
            ),
            plants=("secret",),
        ),
        Turn(
            at="11:14",
            prompt="what's the actual fix",
            steps=(
                Edit(
                    "billing/migrations/0042_backfill_invoice_numbers.py",
                    "from billing.models import Invoice\n\n\ndef backfill(apps, schema_editor):"
                    "\n    seq = 1\n    for invoice in Invoice.objects.filter(number__isnull="
                    "True):",
                    "\n\ndef backfill(apps, schema_editor):\n    Invoice = apps.get_model("
                    '"billing", "Invoice")\n    seq = 1\n    for invoice in Invoice.objects'
                    '.filter(number__isnull=True).order_by("created_at", "id"):',
                ),
                Shell(
                    "pytest billing/tests/test_migrations.py -k 0042 --count 30 -q",
                    "..............................                            [100%]\n"
                    "30 passed in 94.10s",
                ),
            ),
            answer=(
                "The fix is two changes in `0042_backfill_invoice_numbers.py`. The root cause "
                "was the unordered queryset: without `ORDER BY`, Postgres returns rows in "
                "physical order, and the test's earlier `UPDATE`s create new row versions, so "
                "that order changes from run to run. The migration now iterates with "
                '`.order_by("created_at", "id")`, `id` breaking ties for invoices created '
                "in the same microsecond. I also replaced `from billing.models import Invoice` "
                'with `apps.get_model("billing", "Invoice")`, because the live model breaks '
                "a migration as soon as it gains a field the migration state doesn't know yet. "
                "The test passed 30 out of 30 runs with `--count 30`."
            ),
            gold=("q02",),
            plants=("insight",),
        ),
        Turn(
            at="11:40",
            prompt="are there other migrations with the same problem?",
            steps=(
                Shell(
                    "rg -n 'from billing.models import|objects\\.(filter|all)\\(' "
                    "billing/migrations/ | rg -v order_by",
                    "billing/migrations/0031_split_customer_address.py:12:from billing.models "
                    "import Customer\nbilling/migrations/0038_default_currency.py:9:    for c "
                    "in Customer.objects.all():",
                ),
            ),
            answer=(
                "Two more: `0031_split_customer_address.py` imports the live `Customer` model, "
                "and `0038_default_currency.py` iterates `Customer.objects.all()` without "
                "ordering, which is harmless there because the result doesn't depend on order. "
                "I switched both to `apps.get_model` and left 0038's ordering alone. To stop "
                "this from coming back, `tests/test_migrations_lint.py` now fails if any file "
                "in `*/migrations/` imports from `*.models`."
            ),
        ),
        Turn(
            at="12:05",
            prompt="also the test suite takes 7 minutes on CI, can we speed it up",
            steps=(
                Shell(
                    "pytest --durations=5 -q 2>&1 | tail -7",
                    "============================= slowest 5 durations "
                    "=============================\n71.32s setup    billing/tests/test_api.py::"
                    "test_list_invoices\n38.90s call     billing/tests/test_migrations.py::"
                    "test_0042_backfill_invoice_numbers\n36.12s call     billing/tests/"
                    "test_migrations.py::test_0031_split_customer_address\n4.02s call     "
                    "billing/tests/test_pdf.py::test_render_large_invoice\n2.87s call     "
                    "billing/tests/test_tax.py::test_reverse_charge_matrix",
                ),
            ),
            answer=(
                "Most of the time is migrations: building the test database runs all 112 "
                "migrations (71 s), and the migration tests rebuild it twice more. We'll use "
                "`pytest --reuse-db` locally and, on CI, run the migration tests in a separate "
                "job while the main suite runs with `--nomigrations` and `pytest-xdist -n 4`. "
                "With that split the test stage went from 7m05s to 2m40s on the branch. "
                "`--nomigrations` is safe for the main suite because the separate migration "
                "job is exactly what checks the schema."
            ),
            plants=("decision",),
        ),
        Turn(
            at="12:31",
            prompt="rotated the db password. push the branch",
            steps=(
                Shell(
                    "git push -u origin fix/flaky-0042",
                    "remote: To create a merge request for fix/flaky-0042, visit:\nremote:   "
                    "https://gitlab.com/brightlane/ledgerline/-/merge_requests/new\n"
                    " * [new branch]      fix/flaky-0042 -> fix/flaky-0042",
                ),
            ),
            answer=(
                "Pushed `fix/flaky-0042` and opened MR !318 'Order invoice number backfill, "
                "lint migration imports, split CI test jobs'. The pipeline is green: the "
                "migrations job takes 3m10s and the unit tests 2m40s in parallel. The old "
                "password is rejected by the CI database now, so the rotation worked."
            ),
        ),
    ),
)

PGBOUNCER = Session(
    key="ledgerline-pgbouncer",
    tool="claude",
    project=LEDGERLINE,
    date="2026-10-08",
    branch="pgbouncer",
    ai_title="pgbouncer prepared statements and Celery beat locking",
    summary="psycopg 3 prepared statements vs pgbouncer transaction pooling; then a topic "
    "switch to double-firing Celery beat (advisory lock).",
    turns=(
        Turn(
            at="16:00",
            prompt=(
                "after putting pgbouncer in front of postgres (transaction pooling) we get "
                'random `psycopg.errors.InvalidSqlStatementName: prepared statement "_pg3_3" '
                "does not exist`. what's going on"
            ),
            answer=(
                "Turns out this is psycopg 3's automatic prepared statements colliding with "
                "transaction pooling. After a query has run 5 times on a connection "
                "(`prepare_threshold=5`), psycopg prepares it on the server as `_pg3_N`, but "
                "pgbouncer in transaction mode hands the next transaction to a different "
                "server connection, where that statement doesn't exist. psycopg 2 never "
                "prepared statements, which is why this appeared only with the new driver "
                "behind pgbouncer."
            ),
            gold=("q14",),
            plants=("insight",),
        ),
        Turn(
            at="16:12",
            prompt="fix?",
            steps=(
                Edit(
                    "config/settings/base.py",
                    '        "OPTIONS": {},',
                    '        "OPTIONS": {"prepare_threshold": None},\n        '
                    '"DISABLE_SERVER_SIDE_CURSORS": True,',
                ),
            ),
            answer=(
                'We\'ll turn server-side prepares off in Django: `DATABASES["default"]'
                '["OPTIONS"] = {"prepare_threshold": None}`, plus '
                "`DISABLE_SERVER_SIDE_CURSORS = True`, because the named cursors behind "
                "`.iterator()` break under transaction pooling too. pgbouncer 1.21+ could track "
                "prepared statements itself (`max_prepared_statements`), but we run 1.18 from "
                "Debian bookworm and upgrading is a separate change; and disabling prepares "
                "costs nothing measurable because our queries are short. The error is gone on "
                "staging after two hours of load test."
            ),
            gold=("q14",),
            plants=("decision",),
        ),
        Turn(
            at="16:40",
            prompt=(
                "Unrelated, but: we now run two celery beat pods for HA and the monthly invoice "
                "run fired twice on Oct 1. how do we stop double scheduling?"
            ),
            answer=(
                "Rather than making sure only one beat runs, we'll use a Postgres advisory lock "
                "to guard the job itself: `generate_monthly_invoices` starts with `SELECT "
                "pg_try_advisory_lock(hashtext('ledgerline:monthly-invoices'))` and returns "
                "immediately when it gets `false`. The lock lives in the database both pods "
                "already share, so there is no new infrastructure, and Postgres releases it "
                "automatically if the worker dies and its connection closes. One catch with "
                "pgbouncer: session-level advisory locks don't survive transaction pooling, so "
                "the task takes `pg_try_advisory_xact_lock` inside one transaction for the "
                "whole run."
            ),
            gold=("q15", "q48"),
            plants=("decision", "topic_switch", "cross_project"),
        ),
        Turn(
            at="16:58",
            prompt="the monthly run takes 25 minutes, one transaction for all of that sounds bad",
            steps=(
                Edit(
                    "billing/tasks/invoicing.py",
                    '    with transaction.atomic():\n        cursor.execute("SELECT '
                    'pg_try_advisory_xact_lock(hashtext(%s))", [LOCK_NAME])',
                    '    with connections["locks"].cursor() as lock_cursor:\n        '
                    'lock_cursor.execute("SELECT pg_try_advisory_lock(hashtext(%s))", '
                    "[LOCK_NAME])",
                ),
            ),
            answer=(
                "Agreed: a 25-minute transaction holds back VACUUM and keeps row locks for the "
                "whole run. The task now takes a session-level `pg_try_advisory_lock` on a "
                'dedicated `DATABASES["locks"]` alias that connects straight to Postgres on '
                "5432, bypassing pgbouncer, and does the invoice work through the normal pooled "
                "connection in batches of 200 customers, one transaction each. If the worker "
                "dies, the direct connection closes and the lock goes with it. I removed the "
                "xact-lock version."
            ),
            gold=("q15", "q48"),
        ),
        Turn(
            at="17:30",
            prompt="test it with both pods",
            steps=(
                Shell(
                    "kubectl -n ledgerline-staging exec beat-0 -- celery -A config call "
                    "billing.tasks.generate_monthly_invoices & kubectl -n ledgerline-staging "
                    "exec beat-1 -- celery -A config call billing.tasks."
                    "generate_monthly_invoices; wait",
                    "3f0c1d2e-5b8e-4a38-9d3e-2f1b7c6a9e01\n8a4e7b90-1c2d-4f3e-a5b6-c7d8e9f0a1b2",
                    description="Trigger the monthly run from both beat pods",
                ),
            ),
            answer=(
                "On staging I triggered `generate_monthly_invoices` from both beat pods in the "
                "same second: `beat-0` got the lock and generated 1,284 invoices in 24m10s; "
                "`beat-1` logged `monthly invoice run already in progress, skipping` and "
                "finished in 40 ms. Invoice numbers are contiguous (INV-2026-1001 to "
                "INV-2026-2284) with no duplicates, and the `locks` alias shows up as one extra "
                "direct connection in `pg_stat_activity` while the run holds the lock."
            ),
        ),
    ),
)

PRORATION = Session(
    key="ledgerline-proration",
    tool="claude",
    project=LEDGERLINE,
    date="2026-10-13",
    branch="proration",
    ai_title="Proration for plan changes",
    summary="Mid-cycle plan changes: corrected from floats to integer cents, credit notes for "
    "downgrades, VAT; topic switch to an invoice footer.",
    turns=(
        Turn(
            at="10:30",
            prompt=(
                "implement proration for mid-cycle plan upgrades: a customer on Basic (€29/"
                "month) upgrades to Pro (€79/month) on day X, we charge the difference for the "
                "remaining days"
            ),
            steps=(
                Write(
                    "billing/proration.py",
                    "def prorate(old_price, new_price, period_start, period_end, change_at):\n"
                    "    total_days = (period_end - period_start).days\n    remaining_days = "
                    "(period_end - change_at).days\n    return round((new_price - old_price) * "
                    "remaining_days / total_days, 2)\n",
                ),
                Shell(
                    "pytest billing/tests/test_proration.py -q",
                    "...                                                       [100%]\n"
                    "3 passed in 0.08s",
                    description="Run proration tests",
                ),
            ),
            answer=(
                "Added `billing/proration.py` with `prorate(old_price, new_price, period_start, "
                "period_end, change_at)`, which returns the amount to charge now: "
                "`(new - old) * remaining_days / total_days`. An upgrade on day 13 of a 30-day "
                "period is (79 - 29) x 18 / 30 = 30.00. The result is rounded to 2 decimals "
                "with `round()`, and three tests pass."
            ),
        ),
        Turn(
            at="10:52",
            prompt=(
                "you should have used Decimal. floats gave me 0.01 discrepancies against Stripe "
                "on two test invoices (33.33 vs 33.34). we never do money in floats in this "
                "codebase, amounts are integer cents"
            ),
            steps=(
                Edit(
                    "billing/proration.py",
                    "    return round((new_price - old_price) * remaining_days / total_days, 2)",
                    "    delta = Decimal(new_cents - old_cents) * remaining_seconds / "
                    "total_seconds\n    return int(delta.quantize(Decimal(1), "
                    "rounding=ROUND_HALF_EVEN))",
                ),
                Shell(
                    "pytest billing/tests/test_proration.py -q",
                    ".....                                                     [100%]\n"
                    "5 passed in 0.09s",
                    description="Run proration tests",
                ),
            ),
            answer=(
                "Sorry, that was wrong for money, and the convention here is clear "
                "(`amount_cents = models.BigIntegerField()` everywhere). `prorate` now takes "
                "and returns integer cents and divides with `Decimal`: `(Decimal(new_cents - "
                "old_cents) * remaining_seconds / total_seconds).quantize(Decimal(1), "
                "rounding=ROUND_HALF_EVEN)`. Prorating by seconds instead of days is how "
                "Stripe does it, and banker's rounding reproduces Stripe's result on both of "
                "your test invoices (3334 cents). Those two invoices are now regression tests."
            ),
            gold=("q20",),
            plants=("correction",),
        ),
        Turn(
            at="11:15",
            prompt="what about downgrades",
            answer=(
                "For downgrades we won't refund money; we issue a credit note for the unused "
                "difference, applied to the next invoice. That is Stripe's default with "
                '`proration_behavior="create_prorations"`, and it avoids refund fees. '
                "`prorate` returns a negative amount for a downgrade, and `apply_plan_change` "
                "turns negative amounts into a `CreditNote` instead of a charge. Jonas "
                "confirmed from the finance side that credits are fine for our B2B customers."
            ),
            gold=("q21",),
            plants=("decision",),
        ),
        Turn(
            at="11:36",
            prompt="VAT: the proration charge needs VAT too, customers in DE 19%, AT 20%",
            answer=(
                "The proration line now goes through the same `tax.compute_vat(amount_cents, "
                "customer)` as every other invoice line, so the rate follows the customer's "
                "country, and EU B2B customers with a validated VAT ID get reverse charge (0% "
                "with the 'Reverse charge' note). VAT is computed on the prorated net amount "
                "and rounded half-even to the cent once per line, not per unit. Example: a "
                "3334-cent upgrade for a German consumer is 3334 + 633 VAT = 3967 cents."
            ),
        ),
        Turn(
            at="12:02",
            prompt=(
                "Switching gears: the invoice PDF footer still shows our old bank IBAN. where "
                "is that coming from?"
            ),
            steps=(
                Search(
                    "IBAN",
                    "billing/templates/",
                    "billing/templates/invoices/pdf/footer.html:14:  IBAN DE89 3704 0044 0532 "
                    "0130 00 · BIC COBADEFFXXX",
                ),
            ),
            answer=(
                "It's hard-coded in `billing/templates/invoices/pdf/footer.html` line 14 "
                "instead of coming from settings, which is why changing `COMPANY_BANK` in "
                "August didn't update it. I replaced it with `{{ company.bank.iban }}` from the "
                "`company` context the PDF renderer already passes, and the preview of "
                "INV-2026-1190 shows the new IBAN ending in 4471. Old invoices are stored as "
                "rendered PDFs and keep the old IBAN, which is correct."
            ),
            plants=("topic_switch",),
        ),
    ),
)

POSTGRES_LIMITER = Session(
    key="ledgerline-rate-limit-postgres",
    tool="claude",
    project=LEDGERLINE,
    date="2026-10-21",
    branch="pg-rate-limits",
    ai_title="Move API rate limits from Redis to Postgres",
    summary="Implements the design review's decision: token bucket in Postgres, Redis removed "
    "(contradicts the September Redis decision).",
    turns=(
        Turn(
            at="09:30",
            prompt=(
                "implementing what Jonas and I agreed on Monday: drop redis for rate limiting "
                "and keep the limits in postgres as a token bucket per api key. fail closed by "
                "default, with a per-key flag to fail open. go"
            ),
            steps=(
                Write(
                    "billing/migrations/0051_rate_limit_buckets.py",
                    'from django.db import migrations\n\nSQL = """\nCREATE TABLE '
                    "rate_limit_buckets (\n    api_key_id bigint PRIMARY KEY REFERENCES "
                    "billing_apikey(id) ON DELETE CASCADE,\n    tokens double precision NOT "
                    'NULL,\n    updated_at timestamptz NOT NULL\n);\n"""\n',
                ),
                Write(
                    "billing/api/ratelimit.py",
                    'TAKE_TOKEN = """\nINSERT INTO rate_limit_buckets AS b (api_key_id, '
                    "tokens, updated_at)\nVALUES (%(key)s, %(capacity)s - 1, now())\nON "
                    "CONFLICT (api_key_id) DO UPDATE SET\n    tokens = LEAST(%(capacity)s, "
                    "b.tokens + EXTRACT(EPOCH FROM now() - b.updated_at) * %(rate)s) - 1,\n"
                    '    updated_at = now()\nRETURNING tokens\n"""\n',
                ),
                Shell(
                    "pytest billing/api -q",
                    "..............                                            [100%]\n"
                    "14 passed in 2.31s",
                    description="Run API tests",
                ),
            ),
            answer=(
                "We'll use a token bucket in Postgres instead of the Redis limiter, because a "
                "limiter whose counters can be evicted fails silently; rate limiting no longer "
                "depends on Redis at all. Migration `0051_rate_limit_buckets` creates "
                "`rate_limit_buckets(api_key_id bigint primary key, tokens double precision, "
                "updated_at timestamptz)` as a normal, logged table. Each request runs one "
                "statement, `INSERT ... ON CONFLICT (api_key_id) DO UPDATE SET tokens = "
                "LEAST(capacity, b.tokens + refill) - 1 ... RETURNING tokens`, and a negative "
                "result means 429 with `Retry-After = ceil(-tokens / rate)`. If the statement "
                "fails, the middleware returns 503 unless the key has `rate_limit_fail_open = "
                "True` (migration `0052`), which I set for the two internal dashboard keys."
            ),
            gold=("q01", "q54"),
            plants=("decision", "contradiction"),
        ),
        Turn(
            at="10:05",
            prompt="how fast is it?",
            steps=(
                Shell(
                    "hey -z 60s -c 32 -H 'Authorization: Api-Key $STAGING_KEY' "
                    "https://staging.ledgerline.internal/api/v1/invoices/ | sed -n '1,12p'",
                    "Summary:\n  Total:\t60.0113 secs\n  Slowest:\t0.1920 secs\n  "
                    "Fastest:\t0.0121 secs\n  Average:\t0.0268 secs\n  Requests/sec:\t"
                    "221.4861\n\nLatency distribution:\n  50% in 0.0237 secs\n  95% in "
                    "0.0431 secs\n  99% in 0.0702 secs",
                    description="Load test the API on staging",
                ),
            ),
            answer=(
                "With `hey -z 60s -c 32` against staging (10 API keys, all at their limit) the "
                "limiter statement took 0.38 ms p50 and 1.8 ms p95 in `pg_stat_statements`, and "
                "API p95 went from 41 ms to 43 ms. That was at about 220 requests per second, "
                "five times our production peak of ~40. Lock waits in `pg_stat_activity` "
                "stayed at zero because every key has its own row."
            ),
        ),
        Turn(
            at="10:26",
            prompt="remove django-redis and the redis service from docker-compose",
            steps=(
                Edit(
                    "docker-compose.yml",
                    "  redis:\n    image: redis:7.4-alpine\n    command: redis-server "
                    "--maxmemory 256mb --maxmemory-policy allkeys-lru\n",
                    "",
                ),
                Shell(
                    "rg -il redis --glob '!*.lock' .",
                    "./config/settings/base.py",
                    description="Find remaining Redis references",
                ),
            ),
            answer=(
                "Removed `django-redis` from `pyproject.toml`, switched `CACHES` to Django's "
                "database cache backend (table created by `createcachetable` in migration "
                "`0053`), and deleted the `redis` service from `docker-compose.yml`. A search "
                "for 'redis' now only finds `CELERY_BROKER_URL`, which stays until Celery moves "
                "to SQS. The full suite passes (812 tests)."
            ),
        ),
        Turn(
            at="10:48",
            prompt="the Acme sync key had 600/min in the old limiter. did that survive?",
            answer=(
                "Yes. The per-key override is still `ApiKey.rate_limit_per_minute`, and the "
                "new limiter uses it as both bucket capacity and refill rate (600 tokens, "
                "refilling 10 per second), so Acme's sync key keeps 600/min and can burst up to "
                "600 at once. Keys without an override keep the default of 100/min. I added a "
                "test for the override so it can't silently fall back to 100."
            ),
        ),
        Turn(
            at="11:10",
            prompt="write the ADR",
            steps=(
                Write(
                    "docs/adr/0009-rate-limits-in-postgres.md",
                    "# ADR-0009: API rate limits in Postgres\n\nStatus: accepted, supersedes "
                    "ADR-0006\n\n## Context\n\nOn 16 October Redis reached maxmemory and "
                    "allkeys-lru evicted the rl:* counters.\n",
                ),
            ),
            answer=(
                "Wrote `docs/adr/0009-rate-limits-in-postgres.md`, superseding ADR-0006 (the "
                "Redis fixed-window limiter from September). Context: on 16 October Redis hit "
                "maxmemory, `allkeys-lru` evicted the `rl:*` counters, and the limiter let "
                "about 4x the allowed traffic through for 20 minutes without a single error. "
                "Decision: token bucket in `rate_limit_buckets`, fail closed by default, logged "
                "table. Consequences: up to 2 ms more at p95, Redis can go with the SQS "
                "migration, limiter state survives restarts. It links the 19 October design "
                "review."
            ),
            gold=("q01",),
            plants=("decision",),
        ),
        Turn(
            at="11:35",
            prompt=(
                "Unrelated, but the admin 'regenerate PDF' button should be async like Jonas "
                "said. quick version?"
            ),
            steps=(
                Edit(
                    "billing/admin.py",
                    "        render_invoice_pdf(invoice.id)",
                    "        render_invoice_pdf.delay(invoice.id)\n        self.message_user("
                    'request, "PDF is being regenerated, refresh in a minute")',
                ),
            ),
            answer=(
                "The admin action `regenerate_pdf` now enqueues `render_invoice_pdf.delay("
                "invoice.id)` and shows 'PDF is being regenerated, refresh in a minute' instead "
                "of blocking for up to 9 s. The task writes the new PDF to storage and bumps "
                "`Invoice.pdf_version`, and the admin list shows a spinner while `pdf_pending` "
                "is true. With INV-2026-1190 the worker took 8.7 s and the admin request 60 ms."
            ),
            plants=("topic_switch",),
        ),
    ),
)

DST_INVOICES = Session(
    key="ledgerline-dst-periods",
    tool="claude",
    project=LEDGERLINE,
    date="2026-11-02",
    branch="fix/dst-periods",
    ai_title="DST double-billed hour on October invoices",
    summary="Billing period bounds converted with the current UTC offset double-bill one hour "
    "across the DST change; credit notes for 214 customers. Connects to meterflow.",
    turns=(
        Turn(
            at="08:50",
            prompt=(
                "Holzwerk GmbH says their October invoice includes metered usage from 30 "
                "September 23:00 to midnight, which was already on the September invoice. "
                "other Berlin customers look the same. what happened?"
            ),
            steps=(
                Read(
                    "billing/periods.py",
                    "def period_bounds(customer, first_day, last_day):\n    zone = ZoneInfo("
                    "customer.billing_timezone)\n    offset = timezone(datetime.now(zone)."
                    "utcoffset())\n    start = datetime.combine(first_day, time.min, "
                    "tzinfo=offset)\n    end = datetime.combine(last_day + timedelta(days=1), "
                    "time.min, tzinfo=offset)\n    return start, end\n",
                ),
            ),
            answer=(
                "The root cause is how `period_bounds` attaches the time zone: it takes the "
                "customer zone's *current* UTC offset (`datetime.now(zone).utcoffset()`) and "
                "uses it for both ends of the period. The October invoices were generated on 1 "
                "November, when Berlin was already on CET (+01:00), but 1 October midnight was "
                "in CEST (+02:00). So the October period started at 30 September 23:00 local "
                "time, one hour early, and that hour was billed on both the September and the "
                "October invoice. Every customer whose `billing_timezone` has DST is affected "
                "for the October period: 214 customers."
            ),
            gold=("q22", "q49"),
            plants=("insight", "cross_project"),
        ),
        Turn(
            at="09:12",
            prompt="fix it properly",
            steps=(
                Edit(
                    "billing/periods.py",
                    "    offset = timezone(datetime.now(zone).utcoffset())\n    start = "
                    "datetime.combine(first_day, time.min, tzinfo=offset)\n    end = datetime."
                    "combine(last_day + timedelta(days=1), time.min, tzinfo=offset)",
                    "    start = datetime.combine(first_day, time.min, tzinfo=zone).astimezone("
                    "UTC)\n    end = datetime.combine(last_day + timedelta(days=1), time.min, "
                    "tzinfo=zone).astimezone(UTC)",
                ),
                Shell(
                    "pytest billing/tests/test_periods.py -q",
                    "........                                                  [100%]\n"
                    "8 passed in 0.21s",
                    description="Run period tests",
                ),
            ),
            answer=(
                "Each period boundary is now a local calendar date attached to the zone itself, "
                "not to a fixed offset, and converted to UTC right away: "
                "`datetime.combine(first_day, time.min, tzinfo=zone).astimezone(UTC)`, and the "
                "same for the day after the last day; usage queries use `[start, end)` in UTC. "
                "We'll keep every stored timestamp in UTC and let zoneinfo map each boundary "
                "with the offset valid at that moment, never the offset of 'now'. New tests "
                "cover October 2026 (745 hours, starting 30 September 22:00 UTC) and March "
                "2026 (743 hours) in Europe/Berlin, plus a UTC customer."
            ),
            gold=("q22",),
            plants=("decision",),
        ),
        Turn(
            at="09:40",
            prompt="how many invoices do we need to correct, and how",
            steps=(
                Shell(
                    "python manage.py issue_dst_credits --period 2026-10 --dry-run | tail -3",
                    "Holzwerk GmbH                 9610\n---\n214 invoices, total 131840 cents "
                    "(dry run, nothing created)",
                    description="Dry run of the correction command",
                ),
            ),
            answer=(
                "214 October invoices billed the hour from 30 September 23:00 twice, €1,318.40 "
                "in total; the largest is €96.10 for Holzwerk GmbH. Those invoices are "
                "finalized in Stripe, so we issue credit notes instead of editing them: "
                "`python manage.py issue_dst_credits --period 2026-10 --dry-run` lists the 214 "
                "amounts, and without `--dry-run` it creates Stripe credit notes with reason "
                "`order_change` and the memo 'Correction: daylight saving time double count'. "
                "The dry run matches the SQL total."
            ),
            gold=("q23",),
        ),
        Turn(
            at="10:02",
            prompt="run it for real",
            steps=(
                Shell(
                    "python manage.py issue_dst_credits --period 2026-10 | tail -1",
                    "214 credit notes created, total 131840 cents, log: "
                    "logs/dst_credits_2026-10.csv",
                    description="Create the credit notes",
                ),
            ),
            answer=(
                "Created 214 credit notes in Stripe, €1,318.40 in total, with the ids logged "
                "to `logs/dst_credits_2026-10.csv`; Stripe applies them to each customer's next "
                "invoice automatically. Holzwerk's credit note is CN-2026-0088 for €96.10. The "
                "command sent no emails; support will send the explanation with the template "
                "you approved."
            ),
            gold=("q23",),
        ),
        Turn(
            at="10:20",
            prompt=(
                "meterflow had the same kind of bug last week with the repeated 02:00 hour. "
                "write the rule down here too, so the next person doesn't do this again"
            ),
            steps=(
                Write(
                    "docs/known-issues.md",
                    "## Daylight saving time\n\nNever attach a fixed UTC offset to a local "
                    "date. Attach the zone (ZoneInfo) and convert each boundary to UTC.\n",
                ),
            ),
            answer=(
                "Added a 'Daylight saving time' section to `docs/known-issues.md`: store only "
                "UTC; turn local calendar dates into instants by attaching the zone "
                "(`ZoneInfo`), never a fixed offset and never the offset of 'now'; and test "
                "every date calculation on both transition days. It describes this incident "
                "next to meterflow's, where the utility's local wall times made the 02:00 hour "
                "of 25 October appear twice: different symptoms, same cause, local time "
                "treated as if it had one fixed offset. I linked meterflow's `docs/NOTES.md` "
                "section on time zones."
            ),
            gold=("q49",),
            plants=("cross_project", "insight"),
        ),
    ),
)

CELERY_ACKS = Session(
    key="ledgerline-celery-acks",
    tool="codex",
    project=LEDGERLINE,
    date="2026-11-03",
    summary="Invoice emails lost when an OOM-killed worker had already acked them: acks_late, "
    "idempotent send, memory limits for WeasyPrint.",
    turns=(
        Turn(
            at="13:40",
            prompt=(
                "invoice emails: a celery worker got OOM-killed during the monthly send and 37 "
                "customers never got their invoice email. celery says the tasks were done?"
            ),
            steps=(
                Shell(
                    'python manage.py shell -c "from django_celery_results.models import '
                    "TaskResult as T; print(T.objects.filter(task_name='billing.tasks."
                    "send_invoice_email', date_created__date='2026-11-02').values_list("
                    "'status').annotate(n=Count('id')))\"",
                    "<QuerySet [('SUCCESS', 1247), ('STARTED', 37)]>",
                ),
            ),
            answer=(
                "Turns out they weren't done, only acknowledged. With Celery's default "
                "`acks_late=False` the broker message is acked when a worker *receives* the "
                "task, so when the OOM killer took the worker down, the 37 tasks it had "
                "prefetched or was running were simply gone. The result backend confirms it: "
                "those 37 ids are stuck in `STARTED` and never reached `SUCCESS`."
            ),
            gold=("q24",),
            plants=("insight",),
        ),
        Turn(
            at="13:58",
            prompt="so acks_late?",
            steps=(
                Edit(
                    "config/celery.py",
                    "app.conf.worker_prefetch_multiplier = 4",
                    "app.conf.worker_prefetch_multiplier = 1\napp.conf.task_acks_late = True\n"
                    "app.conf.task_reject_on_worker_lost = True",
                ),
            ),
            answer=(
                "Yes: we'll set `task_acks_late = True` and `task_reject_on_worker_lost = True`, "
                "so a task killed mid-run goes back to the queue instead of vanishing, and "
                "`worker_prefetch_multiplier = 1`, so a dying worker holds at most one task per "
                "process. That makes redelivery possible, which means a task can now run "
                "twice, so `send_invoice_email` checks and sets `Invoice.email_sent_at` under "
                "`select_for_update` before sending and a redelivered task is a no-op. It's the "
                "same idempotency pattern as the Stripe webhooks."
            ),
            gold=("q24",),
            plants=("decision",),
        ),
        Turn(
            at="14:15",
            prompt="resend the 37",
            steps=(
                Shell(
                    "python manage.py resend_invoice_emails --missing --period 2026-10 --dry-run",
                    "37 invoices without email_sent_at (dry run, nothing queued)",
                ),
                Shell(
                    "python manage.py resend_invoice_emails --missing --period 2026-10",
                    "37 invoices without email_sent_at, 37 emails queued (stream: invoices)",
                ),
            ),
            answer=(
                "The dry run found exactly 37 finalized October invoices with `email_sent_at "
                "IS NULL`; I then ran it for real and all 37 emails were accepted by Postmark "
                "(message stream `invoices`). The command goes through the same idempotent "
                "task, so running it twice would not send anything twice."
            ),
        ),
        Turn(
            at="14:33",
            prompt="why did the worker OOM in the first place",
            answer=(
                "The root cause is PDF rendering: the worker renders each PDF with WeasyPrint in "
                "the same process, and "
                "WeasyPrint doesn't give memory back to the OS between documents: RSS grew "
                "from 180 MB to 1.9 GB over about 600 invoices and hit the 2 GiB container "
                "limit. `worker_max_memory_per_child = 600000` (in KiB) makes Celery replace a "
                "child process after the task that crosses 600 MB, which kept RSS under 700 MB "
                "in a rerun on staging. Longer term, PDF rendering should get its own queue and "
                "a small dedicated worker pool."
            ),
            gold=("q25",),
            plants=("insight",),
        ),
    ),
)

SESSIONS = (
    REDIS_LIMITER,
    DJANGO_UPGRADE,
    STRIPE_WEBHOOKS,
    FLAKY_MIGRATION,
    PGBOUNCER,
    PRORATION,
    POSTGRES_LIMITER,
    DST_INVOICES,
    CELERY_ACKS,
)
