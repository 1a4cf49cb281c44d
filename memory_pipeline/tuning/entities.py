"""Constants that tune entities: nodes and mentions (memory_pipeline/entities/)."""

# --- entities: nodes and mentions (memory_pipeline/entities/) --------------------------------
# The closed type set (sql/036): an extractor returns nothing rather than invent a type.
ENTITY_TYPES = (
    "person",
    "project",
    "repository",
    "package",
    "file",
    "host",
    "tool",
    "place",
    "organisation",
)
# Confidence of each offline extractor's mentions: deterministic identifiers and speakers are
# certain; an alias (a name known from earlier mentions) and a backticked command less so; a
# name found by its phrasing ("my friend X", "moved to X", "works at X") least.
ENTITY_CONFIDENCE = {
    "identifier": 1.0,
    "speaker": 1.0,
    "project": 1.0,
    "alias": 0.9,
    "command": 0.9,
    "vocabulary": 0.9,
    "pattern": 0.7,
}
# Speakers that name a role, not a person: never a person node.
ENTITY_ROLE_SPEAKERS = ("user", "agent", "assistant", "system", "codex", "claude", "ai", "bot")
# Tools recognised as the first word of a backticked command (`git rebase`, `make test`).
ENTITY_KNOWN_TOOLS = (
    "git",
    "make",
    "docker",
    "kubectl",
    "helm",
    "terraform",
    "pytest",
    "ruff",
    "mypy",
    "npm",
    "pnpm",
    "yarn",
    "cargo",
    "go",
    "pip",
    "uv",
    "poetry",
    "psql",
    "pg_dump",
    "pg_restore",
    "redis-cli",
    "curl",
    "ssh",
    "rsync",
    "gh",
    "brew",
    "apt-get",
    "systemctl",
    "journalctl",
    "ollama",
    "dagster",
    "memory-pipeline",
    "node",
    "python",
    "python3",
    "k3s",
    "nginx",
    "jq",
)
# Software named in prose ("we drop Redis", "a systemd timer instead of cron"): a reversal needs
# the dropped choice to be a node both memories mention (issue 34), and offline nothing else
# finds these. Name -> (type, other names of the same node). Only names that are neither an
# ordinary English word nor a person's name (so not "make", "go", "node", "celery", "flask",
# "kafka"); matched as whole words, any case.
ENTITY_KNOWN_SOFTWARE: dict[str, tuple[str, tuple[str, ...]]] = {
    "redis": ("tool", ()),
    "postgres": ("tool", ("postgresql",)),
    "mysql": ("tool", ("mariadb",)),
    "sqlite": ("tool", ("sqlite3",)),
    "mongodb": ("tool", ()),
    "duckdb": ("tool", ()),
    "clickhouse": ("tool", ()),
    "elasticsearch": ("tool", ("opensearch",)),
    "memcached": ("tool", ()),
    "rabbitmq": ("tool", ()),
    "nginx": ("tool", ()),
    "traefik": ("tool", ()),
    "haproxy": ("tool", ()),
    "docker": ("tool", ()),
    "podman": ("tool", ()),
    "kubernetes": ("tool", ("k8s",)),
    "k3s": ("tool", ()),
    "terraform": ("tool", ()),
    "ansible": ("tool", ()),
    "prometheus": ("tool", ()),
    "alertmanager": ("tool", ()),
    "grafana": ("tool", ()),
    "node_exporter": ("tool", ()),
    "zfs_exporter": ("tool", ()),
    "cron": ("tool", ("crontab",)),
    "systemd": ("tool", ()),
    "wireguard": ("tool", ()),
    "tailscale": ("tool", ()),
    "pgbackrest": ("tool", ()),
    "pgbouncer": ("tool", ()),
    "wal-g": ("tool", ()),
    "restic": ("tool", ()),
    "borgbackup": ("tool", ()),
    "minio": ("tool", ()),
    "gitea": ("tool", ()),
    "django": ("package", ()),
    "fastapi": ("package", ()),
    "sqlalchemy": ("package", ()),
    "pandas": ("package", ()),
    "pydantic": ("package", ()),
    "mmap": ("package", ("memmap2",)),
    "memchr": ("package", ()),
    "tokio": ("package", ()),
}
# Longest alias scanned, in words ("New York City", "Bayview Institute of Art").
ENTITY_ALIAS_MAX_WORDS = 4
# Aliases shorter than this are never scanned (initials and two-letter words match anything).
ENTITY_ALIAS_MIN_CHARS = 3
# Ollama backend: memory text shown per memory, memories per chat call, and the confidence
# below which a proposal is dropped by the precheck.
ENTITY_OLLAMA_MEMORY_CHARS = 1500
ENTITY_OLLAMA_BATCH = 8
ENTITY_OLLAMA_MIN_CONFIDENCE = 0.6
ENTITY_OLLAMA_TEMPERATURE = 0.0
ENTITY_OLLAMA_NUM_CTX = 8192
