"""The four projects of the demo developer (Mara), each with its own repository and cwd."""

from __future__ import annotations

from memory_pipeline.demo.spec import Project

LOGSLICE = Project(
    key="logslice",
    name="logslice (Rust CLI)",
    cwd="/home/mara/src/logslice",
    repository_url="git@github.com:mara-dev/logslice.git",
    agents_md=(
        "# logslice\n\n"
        "Rust CLI that prints the lines of a JSON-lines log that fall into a time window.\n\n"
        "- `cargo test` must pass; `cargo clippy -- -D warnings` must be clean.\n"
        "- Library code returns typed errors (thiserror); only `src/main.rs` uses anyhow.\n"
        "- Benchmarks: `hyperfine` on /data/logs/access-2026-09.json (2.3 GB).\n"
    ),
)

LEDGERLINE = Project(
    key="ledgerline",
    name="ledgerline (Django billing service)",
    cwd="/home/mara/work/ledgerline",
    repository_url="git@gitlab.com:brightlane/ledgerline.git",
    agents_md=(
        "# ledgerline\n\n"
        "Django 5 billing service for Brightlane (invoices, Stripe, public API).\n\n"
        "- Money is always integer cents (`amount_cents`), never floats.\n"
        "- Run tests with `pytest -q`; migrations must use `apps.get_model`.\n"
        "- Ask before touching anything under `billing/migrations/` that is already deployed.\n"
    ),
)

HOMELAB = Project(
    key="homelab",
    name="homelab (Proxmox, Terraform, Ansible)",
    cwd="/home/mara/homelab",
    repository_url="ssh://git@git.lab.lan:2222/mara/homelab.git",
    agents_md=(
        "# homelab\n\n"
        "Terraform for Proxmox VMs (terraform/), Ansible for everything inside them (ansible/).\n\n"
        "- Never print secrets; vault files are `*.vault.yml`.\n"
        "- Run `ansible-playbook --check --diff` before a real run.\n"
    ),
)

METERFLOW = Project(
    key="meterflow",
    name="meterflow (data pipeline)",
    cwd="/home/mara/src/meterflow",
    repository_url="git@github.com:mara-dev/meterflow.git",
    agents_md=(
        "# meterflow\n\n"
        "Nightly ingestion of smart-meter readings (utility CSV over SFTP, GridPulse API) into\n"
        "Postgres and Parquet, with polars.\n\n"
        "- `pytest -q` for tests; `pytest -m slow` for the memory tests.\n"
        "- Store timestamps in UTC only.\n"
    ),
)

PROJECTS = (LOGSLICE, LEDGERLINE, HOMELAB, METERFLOW)
