"""Mara's Kiro sessions: Kiro CLI in the terminal (v2 session files) and Kiro IDE chats.

Rendered by `memory_pipeline/demo/render_kiro.py`: Kiro CLI sessions as
`kiro_home/sessions/cli/<id>.jsonl` + `<id>.json` with the typed prompts in
`kiro_home/.cli_bash_history`; Kiro IDE sessions as
`kiro_ide/kiro.kiroagent/workspace-sessions/<base64url(cwd)>/<id>.json` + `sessions.json`.
`mode="subagent"` marks a Kiro CLI session another session spawned (`parent_session_id`).
"""

from __future__ import annotations

from memory_pipeline.demo.conversations.projects import HOMELAB, METERFLOW
from memory_pipeline.demo.spec import Read, Say, Session, Shell, Turn

BACKUP_TIMER = Session(
    key="kiro-cli-homelab-backup-timer",
    tool="kiro_cli",
    project=HOMELAB,
    date="2026-10-27",
    summary="Kiro CLI: a systemd timer for the nightly restic backup of the NAS share.",
    turns=(
        Turn(
            at="21:05",
            prompt=(
                "the restic backup of the nas share still runs from root's crontab. move it to "
                "a systemd timer in the ansible role"
            ),
            steps=(
                Read("ansible/roles/backup/tasks/main.yml", "- name: restic cron\n  cron: ..."),
                Say("I'll replace the cron task with a service and a timer unit."),
            ),
            answer=(
                "The backup role now installs `restic-nas.service` (Type=oneshot, "
                "`EnvironmentFile=/etc/restic/nas.env`) and `restic-nas.timer` with "
                "`OnCalendar=*-*-* 02:30` and `Persistent=true`, so a run missed while the host "
                "was off happens at the next boot. The old cron entry is removed with `state: "
                "absent` in the same play."
            ),
            plants=("decision",),
        ),
        Turn(
            at="21:12",
            prompt=(
                "add a random delay so it does not hit the nas at the same "
                "second as the VM snapshots"
            ),
            answer=(
                "Added `RandomizedDelaySec=20m` and `AccuracySec=1m` to the timer: the run now "
                "starts somewhere between 02:30 and 02:50, after the 02:15 Proxmox snapshot job "
                "has usually finished."
            ),
        ),
    ),
)

TIMER_CHECK = Session(
    key="kiro-cli-homelab-timer-check",
    tool="kiro_cli",
    project=HOMELAB,
    date="2026-10-27",
    mode="subagent",
    summary="Kiro CLI subagent: checks that no other role still schedules restic with cron.",
    turns=(
        Turn(
            at="21:08",
            prompt="Find every cron job in the ansible roles that still calls restic",
            steps=(
                Shell("grep -rn restic ansible/roles --include=*.yml", "backup/tasks/main.yml:3"),
            ),
            answer="Only `ansible/roles/backup/tasks/main.yml` schedules restic with cron.",
        ),
    ),
)

POLARS_CAST = Session(
    key="kiro-cli-meterflow-polars-cast",
    tool="kiro_cli",
    project=METERFLOW,
    date="2026-10-29",
    summary="Kiro CLI: a strict cast of the meter id column in the polars reader.",
    turns=(
        Turn(
            at="08:40",
            prompt=(
                "the gridpulse csv sometimes has meter ids with a leading zero and polars reads "
                "them as int. how do I keep them as strings"
            ),
            answer=(
                'Pass `schema_overrides={"meter_id": pl.Utf8}` to `pl.read_csv` (and to '
                "`scan_csv` in the lazy reader). Inferring the type drops the leading zero, so "
                "`0042` and `42` would become the same meter; with the override both stay "
                "distinct strings and the join with the meter table keeps working."
            ),
            plants=("insight",),
        ),
    ),
)

IDE_DASHBOARD = Session(
    key="kiro-ide-meterflow-dashboard",
    tool="kiro_ide",
    project=METERFLOW,
    date="2026-10-30",
    summary="Kiro IDE chat: which chart library for the consumption dashboard.",
    turns=(
        Turn(
            at="14:20",
            prompt=(
                "For the consumption dashboard: plotly or vega-lite? It only "
                "needs daily bars per meter"
            ),
            answer=(
                "Vega-Lite via Altair: daily bars per meter is a single `mark_bar` spec, the "
                "JSON spec can be stored next to the Parquet files and rendered without a "
                "Python server, and it is a tenth of plotly's bundle size."
            ),
            plants=("decision",),
        ),
        Turn(
            at="14:31",
            prompt="Make the bars stack by tariff (day/night)",
            answer=(
                "Added `color=alt.Color('tariff:N')` with the default stack: each day's bar now "
                "splits into the day and night tariff, and the tooltip shows both kWh values."
            ),
        ),
    ),
)

IDE_VLAN = Session(
    key="kiro-ide-homelab-vlan",
    tool="kiro_ide",
    project=HOMELAB,
    date="2026-11-02",
    summary="Kiro IDE chat: a separate VLAN for the IoT devices.",
    turns=(
        Turn(
            at="19:02",
            prompt=(
                "I want the IoT plugs on their own VLAN. What do I change on the proxmox bridge?"
            ),
            answer=(
                "Make `vmbr0` VLAN-aware (`bridge-vlan-aware yes`, `bridge-vids 2-4094`) in "
                "`/etc/network/interfaces`, then give the Home Assistant VM a second NIC tagged "
                "with VLAN 30. The switch port to the access point carries VLAN 30 tagged."
            ),
            plants=("decision",),
        ),
    ),
)

KIRO_SESSIONS: tuple[Session, ...] = (
    BACKUP_TIMER,
    TIMER_CHECK,
    POLARS_CAST,
    IDE_DASHBOARD,
    IDE_VLAN,
)
# The session that spawned each subagent session.
PARENTS = {TIMER_CHECK.key: BACKUP_TIMER.key}
