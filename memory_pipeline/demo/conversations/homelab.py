"""homelab: Proxmox VMs with Terraform, everything inside them with Ansible."""

from __future__ import annotations

from memory_pipeline.demo.conversations.projects import HOMELAB
from memory_pipeline.demo.spec import (
    Delegate,
    Edit,
    Name,
    Read,
    Say,
    Search,
    Session,
    Shell,
    Turn,
    Write,
)

# Clearly fake AWS credentials the user pastes from an env file (redacted at capture).
FAKE_AWS_ACCESS_KEY_ID = "AKIAFAKEDEMO2026XQ7Z"
FAKE_AWS_SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYDEMOFAKE42"

PROXMOX_TERRAFORM = Session(
    key="homelab-proxmox-terraform",
    tool="codex",
    project=HOMELAB,
    date="2026-09-23",
    names=(Name("2026-09-23 20:34", "proxmox terraform"),),
    summary="One long Codex thread resumed on three days: provider choice, state backend, "
    "clone and cloud-init problems, a VM module, importing existing VMs.",
    turns=(
        Turn(
            at="20:32",
            prompt=(
                "I want to manage my proxmox VMs with terraform instead of clicking around in "
                "the UI. which provider? I've seen telmate/proxmox in old blog posts"
            ),
            steps=(
                Write(
                    "terraform/proxmox/versions.tf",
                    'terraform {\n  required_version = ">= 1.10"\n  required_providers {\n'
                    '    proxmox = {\n      source  = "bpg/proxmox"\n      version = "~> '
                    '0.84"\n    }\n  }\n}\n\nprovider "proxmox" {\n  ssh {\n    agent = '
                    "true\n  }\n}\n",
                ),
            ),
            answer=(
                "We'll use `bpg/proxmox` rather than `telmate/proxmox`. bpg is actively "
                "maintained, covers the Proxmox VE 8 API including cloud-init snippets, image "
                "downloads and proper VM cloning, while telmate's provider has long-standing "
                "issues with disk reordering that produce plans wanting to recreate disks. bpg "
                "can also fall back to SSH for the few things the API can't do, like uploading "
                "snippets. I created `terraform/proxmox/versions.tf` pinning `bpg/proxmox ~> "
                "0.84`; the provider reads `PROXMOX_VE_ENDPOINT` and `PROXMOX_VE_API_TOKEN` "
                "from the environment."
            ),
            gold=("q27",),
            plants=("decision",),
        ),
        Turn(
            at="20:55",
            prompt="api token: should it just be root@pam?",
            answer=(
                "No, give Terraform its own user and role: `pveum user add terraform@pve`, "
                '`pveum role add TerraformProv -privs "Datastore.AllocateSpace Datastore.Audit '
                "Pool.Allocate Sys.Audit Sys.Console Sys.Modify VM.Allocate VM.Audit VM.Clone "
                "VM.Config.CDROM VM.Config.Cloudinit VM.Config.CPU VM.Config.Disk "
                "VM.Config.HWType VM.Config.Memory VM.Config.Network VM.Config.Options "
                'VM.Migrate VM.PowerMgmt SDN.Use"`, `pveum aclmod / -user terraform@pve -role '
                "TerraformProv`, then `pveum user token add terraform@pve tf --privsep 0`. The "
                "token looks like `terraform@pve!tf=<uuid>`; keep it in `pass` and export it "
                "from `.envrc` with direnv, never in the repository."
            ),
        ),
        Turn(
            at="21:20",
            prompt="where does the state live? I don't want it only on my laptop",
            steps=(
                Write(
                    "terraform/proxmox/backend.tf",
                    'terraform {\n  backend "s3" {\n    bucket       = "tfstate"\n    key   '
                    '       = "proxmox/terraform.tfstate"\n    region       = "us-east-1"\n'
                    "    use_lockfile = true\n    endpoints    = { s3 = "
                    '"https://minio.lab.lan:9000" }\n    use_path_style              = true\n'
                    "    skip_credentials_validation = true\n    skip_requesting_account_id  = "
                    "true\n    skip_region_validation      = true\n  }\n}\n",
                ),
                Shell(
                    "terraform init -migrate-state",
                    'Initializing the backend...\nSuccessfully configured the backend "s3"! '
                    "Terraform will automatically\nuse this backend unless the backend "
                    "configuration changes.\nTerraform has been successfully initialized!",
                ),
            ),
            answer=(
                "We'll keep the state in the MinIO instance on the NAS through the S3 backend "
                "with native locking: Terraform 1.10+ supports `use_lockfile = true`, which "
                "writes a `.tflock` object next to the state, so no DynamoDB table is needed. "
                "The backend in `terraform/proxmox/backend.tf` points at "
                "`https://minio.lab.lan:9000` with `use_path_style = true` and the three "
                "`skip_*_validation` flags MinIO needs. Versioning is enabled on the `tfstate` "
                "bucket, so a bad apply can be rolled back to the previous state object. "
                "`terraform init -migrate-state` moved your local state there."
            ),
            gold=("q28",),
            plants=("decision",),
        ),
        Turn(
            at="2026-09-26 10:15",
            prompt=(
                "back on this. cloning the debian 12 template fails: `Error: error waiting for "
                "VM clone: ... unable to find storage 'local-lvm'`"
            ),
            steps=(
                Shell(
                    "ssh root@pve1 pvesm status",
                    "Name             Type     Status           Total            Used       "
                    "Available        %\nlocal             dir     active        98497780      "
                    "  14203124        79244392   14.42%\ntank-vm        zfspool     active    "
                    "  1885339648       412996608      1472343040   21.91%",
                ),
            ),
            answer=(
                "The root cause: the template still lives on `local-lvm`, but pve1 doesn't have "
                "`local-lvm` any more since you moved the VM disks to the ZFS pool `tank-vm`: "
                "`pvesm status` lists only `local` and `tank-vm`. A clone copies the template's "
                "disk configuration, so it asks for the old storage. Setting `datastore_id = "
                '"tank-vm"` in the clone block only helps for full clones; the clean fix is to '
                "move the template's disk once with `qm disk move 9000 scsi0 tank-vm`, since "
                "every future clone would hit the same error."
            ),
            gold=("q29",),
            plants=("insight",),
        ),
        Turn(
            at="10:40",
            prompt="moved it. now the VM boots but cloud-init doesn't set my ssh key",
            steps=(
                Shell(
                    "ssh root@pve1 qm cloudinit dump 101 user",
                    "#cloud-config\nhostname: grafana\nmanage_etc_hosts: true\nuser: mara\n"
                    "chpasswd:\n  expire: False\nusers:\n  - default\npackage_upgrade: true",
                ),
            ),
            answer=(
                "The generated cloud-init user data has no `ssh_authorized_keys` at all. The "
                "keys come from `var.ssh_keys`, which was empty because `terraform.tfvars` is "
                "in `.gitignore` and you ran from a fresh clone, and Terraform didn't complain "
                "because the variable had `default = []`. I removed the default, so a missing "
                "key is now a plan-time error, and `locals.tf` reads the key from "
                "`~/.ssh/id_ed25519.pub` with `file()`. After `terraform apply` the VM accepts "
                "`ssh mara@10.0.20.31`."
            ),
            plants=("insight",),
        ),
        Turn(
            at="11:05",
            prompt="make a module so I can stamp out VMs with just name/cores/memory/ip",
            steps=(
                Write(
                    "terraform/proxmox/modules/vm/variables.tf",
                    'variable "name" { type = string }\nvariable "cores" { type = number }\n'
                    'variable "memory_mb" { type = number }\nvariable "disk_gb" { type = '
                    'number }\nvariable "ipv4" { type = string }\nvariable "vlan" {\n  type '
                    "   = number\n  default = 20\n}\n",
                ),
                Shell(
                    "terraform state mv proxmox_virtual_environment_vm.grafana "
                    "'module.vm[\"grafana\"].proxmox_virtual_environment_vm.this' && terraform "
                    "plan",
                    'Move "proxmox_virtual_environment_vm.grafana" to "module.vm[\\"grafana'
                    '\\"].proxmox_virtual_environment_vm.this"\nSuccessfully moved 1 '
                    "object(s).\n...\nNo changes. Your infrastructure matches the "
                    "configuration.",
                ),
            ),
            answer=(
                "Added `terraform/proxmox/modules/vm` with the inputs `name`, `cores`, "
                "`memory_mb`, `disk_gb`, `ipv4` (CIDR), `vlan` (default 20) and `tags`, and "
                "the outputs `vm_id` and `ipv4`. `main.tf` now creates `grafana`, `gitea` and "
                "`k3s-1` with a `for_each` over a map in `vms.auto.tfvars`. After `terraform "
                "state mv` of the existing grafana VM into the module, `terraform plan` reports "
                "no changes."
            ),
        ),
        Turn(
            at="2026-10-02 19:40",
            prompt=(
                "how do I bring the existing pihole VM (id 104) under terraform without "
                "recreating it"
            ),
            steps=(
                Edit(
                    "terraform/proxmox/imports.tf",
                    "",
                    'import {\n  to = module.vm["pihole"].proxmox_virtual_environment_vm.this\n'
                    '  id = "pve1/104"\n}\n',
                ),
                Shell(
                    "terraform plan | tail -1",
                    "Plan: 1 to import, 0 to add, 0 to change, 0 to destroy.",
                ),
            ),
            answer=(
                "Use an `import` block instead of the CLI: `import { to = "
                'module.vm["pihole"].proxmox_virtual_environment_vm.this, id = "pve1/104" }` '
                "in `imports.tf`, plus the matching entry in `vms.auto.tfvars`. The first plan "
                "wanted 3 in-place changes (description, tags, `on_boot`), so I set those "
                "inputs to the VM's current values; now the plan says `1 to import, 0 to add, "
                "0 to change, 0 to destroy`. After the apply you can delete the import block."
            ),
            gold=("q30",),
        ),
        Turn(
            at="20:05",
            prompt="applied. anything else left unmanaged?",
            steps=(
                Shell(
                    "ssh root@pve1 qm list",
                    "      VMID NAME                 STATUS     MEM(MB)    BOOTDISK(GB) PID\n"
                    "       101 grafana              running    4096              32.00 1822\n"
                    "       102 gitea                running    2048              32.00 1901\n"
                    "       103 k3s-1                running    8192              32.00 2044\n"
                    "       104 pihole               running    1024              16.00 2130\n"
                    "       105 minio-gw             running    2048              16.00 2210\n"
                    "       106 win11-test           stopped    8192              64.00 0\n"
                    "      9000 debian12-tmpl        stopped    2048               8.00 0",
                ),
            ),
            answer=(
                "`qm list` shows 7 VMs and 5 of them are in Terraform now: grafana, gitea, "
                "k3s-1, pihole and minio-gw. Still unmanaged are `106 win11-test` (stopped) "
                "and the template `9000`. I'd keep the template out of Terraform, since the "
                "Packer job builds it, and either import or delete `win11-test`: it has been "
                "stopped since June and holds 64 GB on `tank-vm`."
            ),
        ),
    ),
)

WIREGUARD = Session(
    key="homelab-wireguard-rotation",
    tool="codex",
    project=HOMELAB,
    date="2026-09-30",
    names=(Name("2026-09-30 21:50", "wireguard key rotation"),),
    summary="Rotating WireGuard keys; the user corrects a big-bang rotation into a rolling one "
    "and gets a runbook.",
    turns=(
        Turn(
            at="21:00",
            prompt=(
                "the wireguard keys on the home vpn are from 2023. write an ansible playbook to "
                "rotate them"
            ),
            steps=(
                Read(
                    "ansible/roles/wireguard/templates/wg0.conf.j2",
                    "[Interface]\nAddress = 10.8.0.1/24\nListenPort = 51820\nPrivateKey = {{ "
                    "wireguard_private_key }}\n\n{% for peer in wireguard_peers %}\n[Peer]\n# "
                    "{{ peer.name }}\nPublicKey = {{ peer.public_key }}\nAllowedIPs = {{ "
                    "peer.ip }}/32\n{% endfor %}\n",
                ),
                Write(
                    "ansible/playbooks/wg-rotate.yml",
                    "- hosts: vpn1\n  become: true\n  tasks:\n    - name: New server keypair\n"
                    "      ansible.builtin.command: wg genkey\n      register: server_key\n",
                ),
            ),
            answer=(
                "Added `playbooks/wg-rotate.yml`: it generates a new server keypair on `vpn1` "
                "with `wg genkey`, new keypairs for all 6 peers, writes them into "
                "`host_vars/*/wireguard.vault.yml`, re-templates `/etc/wireguard/wg0.conf`, "
                "restarts `wg-quick@wg0`, and renders new client configs into "
                "`out/clients/*.conf`."
            ),
        ),
        Turn(
            at="21:12",
            prompt=(
                "No, that's a big bang. if the server key changes, every client is locked out "
                "until I redistribute configs, including the laptop I'm typing this on over "
                "the VPN. I asked for a rotation, one peer at a time."
            ),
            steps=(
                Write(
                    "ansible/playbooks/wg-rotate.yml",
                    "- hosts: vpn1\n  become: true\n  vars:\n    peer: \"{{ undef(hint='pass -e "
                    "peer=<name>') }}\"\n  tasks:\n    - name: Swap the peer's public key "
                    "without restarting\n      ansible.builtin.shell: |\n        wg set wg0 "
                    "peer {{ new_public_key }} allowed-ips {{ peer_ip }}/32\n        wg set wg0 "
                    "peer {{ old_public_key }} remove\n        wg-quick save wg0\n",
                ),
            ),
            answer=(
                "Understood. It's now a rolling rotation: the server key stays, and "
                "`wg-rotate.yml -e peer=<name>` rotates exactly one peer. It generates the new "
                "keypair, renders the client config to `out/clients/<name>.conf`, and only "
                "then swaps the public key on the server with `wg set wg0 peer <new> "
                "allowed-ips <ip>/32`, `wg set wg0 peer <old> remove` and `wg-quick save`, so "
                "there's no restart and the other peers keep their sessions. Only the peer "
                "being rotated is offline until its new config is installed. Do `mara-laptop` "
                "last, from the LAN rather than over the tunnel."
            ),
            gold=("q03",),
            plants=("correction",),
        ),
        Turn(
            at="21:30",
            prompt="and the server key? it's also from 2023",
            answer=(
                "The server key is the one step that touches every peer, so it needs a second "
                "listener instead of a swap: `wg-rotate-server.yml` brings up `wg1` on UDP 51821 "
                "with the new server key, its own tunnel subnet (10.9.0.0/24) and the same peer "
                "public keys, and renders client configs pointing at port 51821 while `wg0` keeps "
                "running. Once every client has switched (`wg show wg1 latest-handshakes` "
                "non-zero for all), run it again with `-e finalize=true` to stop `wg0`, move "
                "`wg1` to 51820 and remove the old key from the vault. No peer is ever locked out "
                "that way."
            ),
            gold=("q03",),
        ),
        Turn(
            at="21:48",
            prompt="write the whole procedure down in docs so future me finds it",
            steps=(
                Write(
                    "docs/runbooks/wireguard-key-rotation.md",
                    "# WireGuard key rotation\n\n1. Peers, one at a time:\n   `ansible-playbook "
                    "playbooks/wg-rotate.yml -e peer=<name>`\n2. Server key: "
                    "`wg-rotate-server.yml`, then `-e finalize=true`\n3. `rm -rf out/clients/`"
                    "\n",
                ),
            ),
            answer=(
                "Wrote `docs/runbooks/wireguard-key-rotation.md`: (1) rotate peers one at a "
                "time with `ansible-playbook playbooks/wg-rotate.yml -e peer=<name>` and "
                "install `out/clients/<name>.conf` on the device (for the phone, show a QR code "
                "with `qrencode -t ansiutf8 < out/clients/phone.conf`); (2) rotate the server "
                "key with `wg-rotate-server.yml` via the parallel `wg1` listener, then `-e "
                "finalize=true`; (3) delete `out/clients/` afterwards, because it contains "
                "private keys. Keys live in `host_vars/*/wireguard.vault.yml`, encrypted with "
                "ansible-vault. Suggested interval: yearly, or right away when a device is "
                "lost."
            ),
            gold=("q03",),
        ),
        Turn(
            at="22:20",
            prompt=(
                "rotated phone and nas-backup so far, both came back. the laptop I'll do "
                "tomorrow from home"
            ),
            steps=(
                Shell(
                    "ssh vpn1 sudo wg show wg0 latest-handshakes",
                    "kJ1f3Yv0dqQ3bZcH1m2Nn8V9o0pX4qR7sT2uW5xY6zA=\t1790799649\n"
                    "p0LmN3bV6cX9zA2sD5fG8hJ1kL4qW7eR0tY3uI6oP9a=\t1790799678\n"
                    "Zq8wX2eC4vB6nM1aS3dF5gH7jK9lP0oI2uY4tR6eW8q=\t1790799595",
                ),
            ),
            answer=(
                "`wg show wg0 latest-handshakes` confirms both: `phone` handshaked 41 s ago and "
                "`nas-backup` 12 s ago with their new public keys, and their old keys are gone "
                "from `wg0.conf`. Four peers are still on 2023 keys: `mara-laptop`, `tablet`, "
                "`parents-router` and `offsite-pi`. `parents-router` needs SSH to the GL.iNet "
                "box from its own LAN, so schedule that one for when you can reach it."
            ),
        ),
    ),
)

RESTIC = Session(
    key="homelab-restic-s3",
    tool="claude",
    project=HOMELAB,
    date="2026-10-03",
    ai_title="Restic backups of the NAS to S3",
    summary="A late-night session (it starts on the previous UTC day): restic to S3, why not "
    "Glacier, retention and restore tests; the user pastes AWS keys; topic switch to SMART.",
    turns=(
        Turn(
            at="00:40",
            prompt=(
                "setting up restic backups of the nas to s3. this is my env file, does it look "
                f"right?\n\nexport AWS_ACCESS_KEY_ID={FAKE_AWS_ACCESS_KEY_ID}\nexport "
                f"AWS_SECRET_ACCESS_KEY={FAKE_AWS_SECRET_ACCESS_KEY}\nexport "
                "RESTIC_REPOSITORY=s3:s3.eu-central-1.amazonaws.com/mara-nas-backup\nexport "
                "RESTIC_PASSWORD_FILE=/root/.restic-pass"
            ),
            answer=(
                "The format is right, but first: that access key pair is now in this "
                "conversation, so deactivate it in IAM and create a new one. Keep the env file "
                "root-owned with mode 600, or better, load the keys from `pass` or systemd "
                "credentials instead of a plain file. The IAM user only needs `s3:ListBucket`, "
                "`s3:GetObject`, `s3:PutObject` and `s3:DeleteObject` on "
                "`arn:aws:s3:::mara-nas-backup` and its objects. The repository URL is correct "
                "for eu-central-1."
            ),
            plants=("secret",),
        ),
        Turn(
            at="00:58",
            prompt=(
                "ok rotated. should I put the bucket on glacier deep archive to save money? "
                "it's 1.2TB"
            ),
            answer=(
                "No: we'll use S3 Standard-Infrequent Access through a lifecycle rule on the "
                "`data/` prefix only, and keep Standard for everything else. restic reads the "
                "`index/`, `snapshots/` and `keys/` files and takes locks on every run, and "
                "`check`, `prune` and restores need to read pack files, so with Deep Archive "
                "those operations fail until objects are restored (12 to 48 hours). For "
                "1.2 TB, Standard-IA costs about €15 a month against €1.20 for Deep Archive, "
                "but restores and prunes actually work. For cold archival, add a yearly "
                "`restic copy` to a second repository and accept that one as restore-only."
            ),
            gold=("q31",),
            plants=("decision", "insight"),
        ),
        Turn(
            at="01:20",
            prompt="what retention? and how do I know the backups are actually restorable",
            steps=(
                Write(
                    "ansible/roles/restic/templates/restic-maintenance.service.j2",
                    "[Service]\nType=oneshot\nEnvironmentFile=/etc/restic/env\nExecStart="
                    "/usr/bin/restic forget --keep-daily 7 --keep-weekly 5 --keep-monthly 12 "
                    "--prune\nExecStart=/usr/bin/restic check --read-data-subset=5%%\n",
                ),
                Shell(
                    "ansible-playbook site.yml --tags restic --limit nas --check --diff | tail -2",
                    "PLAY RECAP *********************************************************\n"
                    "nas                        : ok=9    changed=4    unreachable=0    "
                    "failed=0    skipped=0",
                    description="Dry-run the restic role on the NAS",
                ),
            ),
            answer=(
                "Added `restic-backup.service` and `.timer` to the `restic` role (daily at "
                "03:30, `Persistent=true`) and `restic-maintenance.timer` (Sundays at 05:00). "
                "Retention is `restic forget --keep-daily 7 --keep-weekly 5 --keep-monthly 12 "
                "--prune` in the weekly job. For restorability, the weekly job also runs "
                "`restic check --read-data-subset=5%`, which downloads and verifies a different "
                "5% of the pack files each week, so all data is read about every 20 weeks, and "
                "a monthly `restic restore latest --target /tmp/restore-test --include "
                "/srv/photos/2019` compares checksums with the NAS copy. Failures go to ntfy "
                "through `OnFailure=notify-failure@%n.service`."
            ),
            gold=("q32",),
        ),
        Turn(
            at="01:41",
            prompt=(
                "Switching gears: smartctl says one of the nas disks has "
                "`Reallocated_Sector_Ct 8`. panic?"
            ),
            answer=(
                "No panic, but watch it: 8 reallocated sectors on a 4-year-old drive means it "
                "found bad sectors and remapped them, which is normal wear at low counts. What "
                "matters is whether the number grows. I added a `smartd` rule (`-a -o on -S on "
                "-s (S/../.././02|L/../../6/03) -m root`) for a nightly short test and a "
                "Saturday long test, and a Prometheus alert on "
                '`smartctl_device_attribute{attribute_name="Reallocated_Sector_Ct"}` '
                "increasing within 7 days. The pool is a ZFS mirror, so the disk can be "
                "replaced without data loss; keep a spare 8 TB drive around."
            ),
            plants=("topic_switch",),
        ),
    ),
)

ZFS_ALERTS = Session(
    key="homelab-zfs-alerts",
    tool="codex",
    project=HOMELAB,
    date="2026-10-07",
    summary="ZFS pool and scrub alerts through node_exporter; a subagent audits the roles for "
    "the deprecated apt_key module.",
    turns=(
        Turn(
            at="20:10",
            prompt=(
                "I want alerts when a zfs scrub finds errors or a pool degrades. prometheus and "
                "grafana already run on the grafana vm"
            ),
            answer=(
                "We'll use node_exporter's built-in ZFS collector plus a textfile collector for "
                "scrub results instead of a separate zfs_exporter: node_exporter already "
                'exposes `node_zfs_zpool_state{state="degraded"}` per pool, and a small script '
                "can write the scrub errors from `zpool status -p` to "
                "`/var/lib/node_exporter/textfile/zfs_scrub.prom`. That's one service less to "
                "deploy and update. Alerts: `ZpoolDegraded` when a pool's state isn't `online` "
                "for 5 minutes, and `ZfsScrubErrors` when `zfs_scrub_errors > 0`."
            ),
            plants=("decision",),
        ),
        Turn(
            at="20:26",
            prompt=(
                "implement it in the node_exporter role. also, while you're at it, check all "
                "our ansible roles for apt_key since that's deprecated"
            ),
            steps=(
                Say(
                    "I'll write the scrub script and alert rules; in parallel a subagent audits "
                    "the roles for apt_key."
                ),
                Delegate(
                    key="homelab-apt-key-audit",
                    nickname="Noether",
                    agent_type="explorer",
                    agent_path="/root/audit_apt_key",
                    prompt=(
                        "Audit every role under /home/mara/homelab/ansible/roles for uses of "
                        "the deprecated apt_key module or `apt-key` shell commands. For each, "
                        "report the file and line, the repository it configures, and the "
                        "replacement using signed-by with a keyring in /etc/apt/keyrings. Do "
                        "not edit files."
                    ),
                    steps=(
                        Shell(
                            "rg -n 'apt_key|apt-key' ansible/roles",
                            "ansible/roles/grafana/tasks/main.yml:13:  ansible.builtin."
                            "apt_key:\nansible/roles/docker/tasks/main.yml:8:  ansible.builtin."
                            "apt_key:\nansible/roles/tailscale/tasks/install.yml:5:  shell: "
                            "curl -fsSL https://pkgs.tailscale.com/stable/debian/bookworm."
                            "noarmor.gpg | apt-key add -",
                        ),
                    ),
                    answer=(
                        "Found 3 uses of the deprecated apt_key module or apt-key command:\n"
                        "1. roles/grafana/tasks/main.yml:13 — `ansible.builtin.apt_key` for "
                        "https://apt.grafana.com/gpg.key (repo `deb https://apt.grafana.com "
                        "stable main`). Replace with the key in /etc/apt/keyrings/grafana.asc "
                        "and `signed-by=/etc/apt/keyrings/grafana.asc`.\n"
                        "2. roles/docker/tasks/main.yml:8 — `ansible.builtin.apt_key` for "
                        "https://download.docker.com/linux/debian/gpg. Same replacement with "
                        "/etc/apt/keyrings/docker.asc.\n"
                        "3. roles/tailscale/tasks/install.yml:5 — `curl ... | apt-key add -` in "
                        "a shell task; the pipe also hides curl failures. Replace with get_url "
                        "to /etc/apt/keyrings/tailscale.asc.\n"
                        "No other role references apt_key or apt-key."
                    ),
                ),
                Write(
                    "ansible/roles/node_exporter/files/zfs_scrub_prom.sh",
                    "#!/bin/sh\n# Write ZFS scrub results for the node_exporter textfile "
                    "collector.\nset -eu\nout=/var/lib/node_exporter/textfile/zfs_scrub.prom\n"
                    'zpool status -p | awk -f /usr/local/lib/zfs_scrub.awk > "$out.tmp"\nmv '
                    '"$out.tmp" "$out"\n',
                ),
                Shell(
                    "ansible-playbook site.yml --tags node_exporter,prometheus --limit "
                    "nas,grafana | tail -3",
                    "PLAY RECAP *********************************************************\n"
                    "grafana                    : ok=11   changed=2    unreachable=0    "
                    "failed=0\nnas                        : ok=14   changed=3    unreachable=0"
                    "    failed=0",
                ),
            ),
            answer=(
                "Added `roles/node_exporter/files/zfs_scrub_prom.sh` (run every 15 minutes by "
                "a systemd timer; it parses `zpool status -p` and writes "
                '`zfs_scrub_errors{pool="tank"}` and `zfs_scrub_last_end_timestamp_seconds`) '
                "and the two alert rules in `roles/prometheus/files/rules/zfs.yml`, applied to "
                "`nas` and `grafana`. The apt_key audit found three roles still using it: "
                "`grafana` (tasks/main.yml:13), `docker` (tasks/main.yml:8) and `tailscale`, "
                "which pipes curl into `apt-key add` in tasks/install.yml:5. Each should fetch "
                "its key into `/etc/apt/keyrings/` and reference it with `signed-by=`."
            ),
            gold=("q37",),
        ),
        Turn(
            at="20:58",
            prompt="fix those three",
            steps=(
                Edit(
                    "ansible/roles/grafana/tasks/main.yml",
                    "- name: Add Grafana apt key\n  ansible.builtin.apt_key:\n    url: "
                    "https://apt.grafana.com/gpg.key",
                    "- name: Grafana repository\n  ansible.builtin.deb822_repository:\n    "
                    "name: grafana\n    uris: https://apt.grafana.com\n    suites: stable\n    "
                    "components: main\n    signed_by: https://apt.grafana.com/gpg.key",
                ),
                Shell(
                    "ansible-playbook site.yml --tags repos --limit grafana,docker-1,k3s-1 "
                    "--check --diff | grep -c '^+++'",
                    "3",
                ),
            ),
            answer=(
                "Converted all three roles to `ansible.builtin.deb822_repository` with "
                "`signed_by:` set to the key URL, which downloads the key into "
                "`/etc/apt/keyrings/` itself, so no separate `get_url` task is needed. We'll "
                "use deb822 for every new repository too: it's the native format of Debian 12 "
                "and Ubuntu 24.04, and Ansible manages the `.sources` file as a whole. A "
                "`--check --diff` run on grafana, docker-1 and k3s-1 only changes the "
                "repository files, and `apt update` there shows no `NO_PUBKEY` warnings. A "
                "cleanup task removes the old keys from `/etc/apt/trusted.gpg`."
            ),
            gold=("q37",),
            plants=("decision",),
        ),
        Turn(
            at="21:20",
            prompt="test the alert: can I fake a degraded pool without breaking anything?",
            steps=(
                Shell(
                    "ssh nas 'sudo truncate -s 256M /tmp/d1 /tmp/d2 && sudo zpool create "
                    "testpool mirror /tmp/d1 /tmp/d2 && sudo zpool offline testpool /tmp/d2 && "
                    "zpool status -x testpool'",
                    "  pool: testpool\n state: DEGRADED\nstatus: One or more devices has been "
                    "taken offline by the administrator.",
                ),
            ),
            answer=(
                "Yes, with a throwaway pool backed by files: `truncate -s 256M /tmp/d1 /tmp/d2 "
                "&& zpool create testpool mirror /tmp/d1 /tmp/d2 && zpool offline testpool "
                '/tmp/d2`. `node_zfs_zpool_state{zpool="testpool",state="degraded"}` went to '
                "1 within one scrape interval, `ZpoolDegraded` fired in Alertmanager after the "
                "5-minute `for:` and arrived in ntfy. Clean up with `zpool destroy testpool && "
                "rm /tmp/d1 /tmp/d2`; I already did."
            ),
            gold=("q36",),
        ),
    ),
)

CADDY_DNS = Session(
    key="homelab-caddy-dns01",
    tool="claude",
    project=HOMELAB,
    date="2026-10-16",
    ai_title="Internal TLS with Caddy and DNS-01",
    summary="Wildcard certificates for internal services with Caddy and Cloudflare DNS-01; the "
    "local resolver breaks the propagation check; topic switch to Pi-hole records.",
    turns=(
        Turn(
            at="18:30",
            prompt=(
                "I want real TLS certs for *.lab.example.net on internal services, nothing "
                "exposed to the internet. caddy or traefik?"
            ),
            answer=(
                "We'll go with Caddy and the DNS-01 challenge. Nothing is reachable from the "
                "internet, so HTTP-01 can't work, and DNS-01 only needs an API token for the "
                "zone. Caddy needs the `caddy-dns/cloudflare` module, which the Debian package "
                "doesn't include, so build it with `xcaddy build --with "
                "github.com/caddy-dns/cloudflare`. I prefer Caddy over Traefik here because "
                "your services are plain reverse proxies without Docker labels, and a 20-line "
                "Caddyfile is easier to read than Traefik's dynamic config. Use one wildcard "
                "certificate for `*.lab.example.net` so individual service names don't show up "
                "in Certificate Transparency logs."
            ),
            plants=("decision",),
        ),
        Turn(
            at="18:44",
            prompt="what permissions for the cloudflare token?",
            answer=(
                "Create a custom API token with only `Zone / DNS / Edit` and `Zone / Zone / "
                "Read`, restricted to the zone `example.net` (Zone Resources: Include, Specific "
                "zone). Don't use the Global API Key, which can do everything on the account. "
                "Put the token in `/etc/caddy/cloudflare.env` as `CF_API_TOKEN=...` (mode 600, "
                "owner caddy), load it with `EnvironmentFile=` in a systemd drop-in, and write "
                "`dns cloudflare {env.CF_API_TOKEN}` in the Caddyfile."
            ),
        ),
        Turn(
            at="19:05",
            prompt=(
                "issuance fails: `waiting for record to fully propagate: timed out waiting for "
                "record to fully propagate`"
            ),
            steps=(
                Shell(
                    "dig +short TXT _acme-challenge.lab.example.net; dig +short TXT "
                    "_acme-challenge.lab.example.net @1.1.1.1",
                    '"4zQ1c8rVd2m0yXoE9tK7bN3sPq6wLh5uJ1aF0gY8iCe"',
                    description="Compare the local resolver with a public one",
                ),
                Read(
                    "/etc/resolv.conf",
                    "nameserver 10.0.20.53\nsearch lab.lan",
                ),
            ),
            answer=(
                "The root cause is our own DNS. Caddy checks propagation through the system "
                "resolver, and on this VM that's Pi-hole in front of Unbound, which has a "
                "local zone for `lab.example.net`: it answers `_acme-challenge.lab.example.net` "
                "with NXDOMAIN from the local zone instead of asking Cloudflare, so the check "
                "never succeeds even though Let's Encrypt sees the record fine (the query "
                "against 1.1.1.1 returns it). Setting `resolvers 1.1.1.1 9.9.9.9` in the `tls "
                "{ dns cloudflare ... }` block makes Caddy check against public resolvers; the "
                "wildcard certificate was issued 40 seconds later."
            ),
            gold=("q33",),
            plants=("insight",),
        ),
        Turn(
            at="19:32",
            prompt=(
                "Switching gears: pi-hole keeps forgetting my custom DNS records after updates. "
                "I add them in the web UI"
            ),
            steps=(
                Read(
                    "ansible/roles/pihole/templates/docker-compose.yml.j2",
                    "services:\n  pihole:\n    image: pihole/pihole:{{ pihole_version }}\n"
                    "    volumes:\n      - ./custom.list:/etc/pihole/custom.list\n",
                ),
            ),
            answer=(
                "We'll use Ansible for the records instead of the UI. Turns out Pi-hole v6 "
                "keeps local records in `/etc/pihole/pihole.toml` under `dns.hosts` (the UI "
                "writes there too), but your container only mounts `/etc/pihole/custom.list`, "
                "which v6 no longer reads, so every update recreates `pihole.toml` from the "
                "image and the records are gone. The `pihole` role now templates `dns.hosts` "
                "from `group_vars/all/dns.yml` (all 19 internal names in one list) and mounts "
                "the whole `/etc/pihole` directory as a volume. After `docker compose pull && "
                "docker compose up -d` the records survived."
            ),
            gold=("q34",),
            plants=("decision", "insight", "topic_switch"),
        ),
        Turn(
            at="19:58",
            prompt="point grafana.lab.example.net and gitea.lab.example.net at caddy",
            steps=(
                Edit(
                    "ansible/roles/caddy/templates/Caddyfile.j2",
                    "*.lab.example.net {\n",
                    "*.lab.example.net {\n\t@grafana host grafana.lab.example.net\n\thandle "
                    "@grafana {\n\t\treverse_proxy 10.0.20.31:3000\n\t}\n\t@gitea host "
                    "gitea.lab.example.net\n\thandle @gitea {\n\t\treverse_proxy "
                    "10.0.20.32:3000\n\t}\n",
                ),
                Shell(
                    "curl -sI https://grafana.lab.example.net | head -1",
                    "HTTP/2 302",
                    description="Check the Grafana route",
                ),
            ),
            answer=(
                "Both names now resolve to the Caddy VM (10.0.20.10) through `dns.yml`, and the "
                "wildcard site block routes `grafana.lab.example.net` to 10.0.20.31:3000 and "
                "`gitea.lab.example.net` to 10.0.20.32:3000. `curl -sI "
                "https://grafana.lab.example.net` returns `HTTP/2 302` with the Let's Encrypt "
                "wildcard certificate (valid until 2027-01-14). Gitea also needed `ROOT_URL = "
                "https://gitea.lab.example.net/` in `app.ini`, otherwise clone URLs still "
                "pointed at port 3000."
            ),
        ),
    ),
)

TERRAFORM_DRIFT = Session(
    key="homelab-terraform-drift",
    tool="codex",
    project=HOMELAB,
    date="2026-10-29",
    summary="A plan that never converges (qcow2 on ZFS), growing a disk online, the VLAN table.",
    turns=(
        Turn(
            at="20:20",
            prompt=(
                "every terraform plan wants to change the disk on k3s-1: `~ file_format = "
                '"raw" -> "qcow2"`. applying doesn\'t make it go away'
            ),
            steps=(
                Search(
                    "file_format",
                    "terraform/proxmox/modules/vm/",
                    'terraform/proxmox/modules/vm/main.tf:41:    file_format  = "qcow2"',
                ),
            ),
            answer=(
                "The root cause is that the disk lives on ZFS: on a ZFS-backed "
                "storage Proxmox always creates zvols in `raw` format and ignores a requested "
                "`qcow2`, so after every apply the API reports `raw` again and the provider "
                'sees a difference. The module hard-codes `file_format = "qcow2"`, copied '
                "from an example written for directory storage. I made the module derive it "
                "from the datastore (`raw` for `tank-vm`, `qcow2` for `local`), and the plan is "
                "clean now."
            ),
            gold=("q35",),
            plants=("insight",),
        ),
        Turn(
            at="20:41",
            prompt=(
                "while we're here: k3s-1 is running out of disk, can terraform grow it without "
                "downtime?"
            ),
            steps=(
                Shell(
                    "terraform apply -auto-approve -target 'module.vm[\"k3s-1\"]' | tail -1 && "
                    "ssh mara@10.0.20.33 'sudo growpart /dev/sda 1 && sudo resize2fs /dev/sda1 "
                    "&& df -h /'",
                    "Apply complete! Resources: 0 added, 1 changed, 0 destroyed.\n"
                    "CHANGED: partition=1 start=262144 old: size=66846687 end=67108830 new: "
                    "size=134955487 end=135217630\nFilesystem      Size  Used Avail Use% "
                    "Mounted on\n/dev/sda1        63G   22G   41G  35% /",
                ),
            ),
            answer=(
                "Yes: changing `disk_gb` from 32 to 64 for `k3s-1` is an in-place update (`~ "
                "size = 32 -> 64`), and bpg resizes the zvol online; the VM keeps running. "
                "Inside the guest the partition still has to grow, with `growpart /dev/sda 1 && "
                "resize2fs /dev/sda1`, because cloud-init only grows it at boot. I applied it, "
                "and `df -h /` on k3s-1 now shows 63G with 41G free. Shrinking isn't supported: "
                "the provider refuses with an error instead of destroying the disk."
            ),
        ),
        Turn(
            at="21:02",
            prompt=(
                "good. last thing: I keep forgetting which VLAN is which. put a table in the README"
            ),
            steps=(
                Read(
                    "ansible/group_vars/all/network.yml",
                    "vlans:\n  mgmt: {id: 10, cidr: 10.0.10.0/24}\n  servers: {id: 20, cidr: "
                    "10.0.20.0/24}\n  iot: {id: 30, cidr: 10.0.30.0/24}\n  guest: {id: 40, "
                    "cidr: 10.0.40.0/24}\nwireguard_cidr: 10.8.0.0/24\n",
                ),
            ),
            answer=(
                "Added a 'Network' section to `README.md`: VLAN 10 `mgmt` (10.0.10.0/24: "
                "Proxmox, switches, IPMI), 20 `servers` (10.0.20.0/24: all VMs), 30 `iot` "
                "(10.0.30.0/24: no route to 20 except MQTT on 10.0.20.40:1883), 40 `guest` "
                "(internet only) and the WireGuard range 10.8.0.0/24. The values come from "
                "`ansible/group_vars/all/network.yml`, which the README names as the file to "
                "update first."
            ),
        ),
    ),
)

K3S_STORAGE = Session(
    key="homelab-k3s-storage",
    tool="claude",
    project=HOMELAB,
    date="2026-11-01",
    ai_title="What belongs in k3s",
    summary="Keep Postgres out of k3s, local-path storage, and an uptime-kuma volume mounted at "
    "the wrong path.",
    turns=(
        Turn(
            at="11:00",
            prompt=(
                "I'm tempted to move gitea's postgres into k3s with a helm chart so everything "
                "is in one place. good idea?"
            ),
            answer=(
                "I wouldn't: we'll keep Postgres on its own VM with pgBackRest and run only "
                "stateless apps in k3s. k3s-1 is a single node with the `local-path` "
                "provisioner, so a Postgres pod's data would still sit on one disk, just with "
                "a PVC and chart upgrades between you and the files. Your pgBackRest setup, "
                "with weekly full and daily differential backups and monthly restore tests, "
                "already works, and moving would mean solving backups again inside Kubernetes "
                "for no gain. Gitea can run in k3s and connect to `db.lab.lan:5432` like any "
                "other client."
            ),
            gold=("q50",),
            plants=("decision", "cross_project"),
        ),
        Turn(
            at="11:18",
            prompt=(
                "fair. then what storage for the apps that still need a bit of disk, like "
                "uptime-kuma?"
            ),
            answer=(
                "Stay with k3s's default `local-path` provisioner for now. On a single node "
                "Longhorn has nothing to replicate to, and it costs about 1 GB of RAM plus a "
                "CSI stack to maintain. local-path stores volumes under "
                "`/var/lib/rancher/k3s/storage/` on k3s-1, inside the VM disk that the nightly "
                "vzdump already backs up to the NAS. Revisit Longhorn if a second k3s node "
                "shows up."
            ),
            plants=("decision",),
        ),
        Turn(
            at="11:40",
            prompt=(
                "uptime-kuma lost all its monitors after a pod restart yesterday. it uses "
                "local-path"
            ),
            steps=(
                Shell(
                    "kubectl -n monitoring exec deploy/uptime-kuma -- sh -c 'ls -la /data "
                    "/app/data | head -8'",
                    "/app/data:\ntotal 1440\n-rw-r--r-- 1 root root 1468416 Nov  1 10:37 "
                    "kuma.db\n\n/data:\ntotal 8\ndrwxrwxrwx 2 root root 4096 Oct 11 19:02 .",
                    description="See where uptime-kuma writes its database",
                ),
            ),
            answer=(
                "Turns out the data never was on the volume: the Helm values mount the PVC at "
                "`/data`, but uptime-kuma 2.0 keeps its SQLite database in `/app/data`, so it "
                "wrote into the container's writable layer, which is thrown away when the pod is "
                "recreated; `/data` is empty. I changed `volume.mountPath` to `/app/data` in "
                "`k8s/apps/uptime-kuma/values.yaml`, and after two pod restarts the database "
                "survives. The old monitors are lost, so I re-created the 14 you listed from "
                "`k8s/apps/uptime-kuma/monitors.json` through the import page."
            ),
            gold=("q51",),
            plants=("insight",),
        ),
        Turn(
            at="12:02",
            prompt="lesson for next time?",
            steps=(
                Edit(
                    "k8s/README.md",
                    "## Deploying an app\n",
                    "## Deploying an app\n\nAfter deploying anything stateful, verify "
                    "persistence:\n\n```sh\nkubectl delete pod -l app=<name>\nkubectl wait "
                    "--for=condition=Ready pod -l app=<name>\n```\n",
                ),
            ),
            answer=(
                "Lesson learned: after deploying anything stateful, delete the pod once and "
                "check the data is still there before trusting it, because a wrong mount path "
                "fails silently and the manifest is valid either way. I added that as a "
                "'verify persistence' step to `k8s/README.md` (`kubectl delete pod -l "
                "app=<name>`, `kubectl wait --for=condition=Ready`, then check the app)."
            ),
            gold=("q51",),
            plants=("insight",),
        ),
    ),
)

SESSIONS = (
    PROXMOX_TERRAFORM,
    WIREGUARD,
    RESTIC,
    ZFS_ALERTS,
    CADDY_DNS,
    TERRAFORM_DRIFT,
    K3S_STORAGE,
)
