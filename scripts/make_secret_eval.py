"""Write the labelled redaction set: evaluation/secrets/{secrets,near_misses}.jsonl.

Every secret is a FAKE value of the right shape, drawn from a fixed seed (`random.Random(31)`):
none is, or was, a real credential. Each row is a realistic snippet of one of the three sources
(a Codex rollout's prompt / answer / tool output, a Claude Code session's, a chat import's prompt,
answer or title) with the secret embedded in it.

    secrets.jsonl      {"id", "source", "kind", "text", "secret"}: `secret` must be gone from
                       redact(text) (every occurrence).
    near_misses.jsonl  {"id", "source", "kind", "text"}: redact(text) must return `text` unchanged.

Run: .venv/bin/python scripts/make_secret_eval.py   (rewrites both files; same seed, same files)
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from collections.abc import Callable
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "evaluation" / "secrets"
R = random.Random(31)

UP = string.ascii_uppercase
LO = string.ascii_lowercase
DI = string.digits
B62 = UP + LO + DI
HEX = "0123456789abcdef"
B64 = B62 + "+/"
B64URL = B62 + "-_"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def r(alphabet: str, n: int) -> str:
    return "".join(R.choice(alphabet) for _ in range(n))


def b64(n_bytes: int) -> str:
    return base64.b64encode(R.randbytes(n_bytes)).decode()


def pem(label: str, lines: int = 6) -> str:
    body = "\n".join(r(B64, 64) for _ in range(lines))
    return f"-----BEGIN {label}-----\n{body}\n{r(B64, 20)}==\n-----END {label}-----"


def jwt() -> str:
    def part(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    head = part({"alg": "RS256", "typ": "JWT", "kid": r(HEX, 8)})
    body = part({"sub": r(DI, 9), "iss": "https://auth.example.dev", "exp": R.randint(1, 9**9)})
    return f"{head}.{body}.{r(B64URL, 43)}"


def pw() -> str:
    """A password a person would choose: words, digits and a symbol."""
    words = ["Tr0ub4dor", "hunter", "Sunflower", "orange", "Velvet", "m0nkey", "dragon", "Quartz"]
    return R.choice(words) + R.choice(["!", "#", "$", "&", "@", "%"]) + r(DI, R.randint(2, 4))


# --- the secrets: kind -> (value maker, snippet maker taking the value) ------------------------
# A snippet maker returns the text with the value in it; `bare` kinds are embedded in prose, log,
# JSON, YAML or shell lines by the rotating carriers below, others carry their own context.

BARE: dict[str, Callable[[], str]] = {
    "openai_project_key": lambda: "sk-proj-" + r(B64URL, 74) + "T3BlbkFJ" + r(B64URL, 74),
    "openai_legacy_key": lambda: "sk-" + r(B62, 20) + "T3BlbkFJ" + r(B62, 20),
    "anthropic_api_key": lambda: "sk-ant-api03-" + r(B64URL, 93) + "AA",
    "anthropic_admin_key": lambda: "sk-ant-admin01-" + r(B64URL, 93) + "AA",
    "github_pat_classic": lambda: "ghp_" + r(B62, 36),
    "github_oauth": lambda: "gho_" + r(B62, 36),
    "github_app_token": lambda: "ghs_" + r(B62, 36),
    "github_fine_grained_pat": lambda: "github_pat_" + r(B62, 22) + "_" + r(B62, 59),
    "gitlab_pat": lambda: "glpat-" + r(B64URL, 20),
    "gitlab_runner_token": lambda: "glrt-" + r(B62, 20),
    "gitlab_deploy_token": lambda: "gldt-" + r(B62, 20),
    "slack_bot_token": lambda: f"xoxb-{r(DI, 12)}-{r(DI, 13)}-{r(B62, 24)}",
    "slack_user_token": lambda: f"xoxp-{r(DI, 12)}-{r(DI, 12)}-{r(DI, 13)}-{r(HEX, 32)}",
    "slack_app_token": lambda: f"xapp-1-A{r(UP + DI, 10)}-{r(DI, 13)}-{r(HEX, 64)}",
    "stripe_secret_key": lambda: "sk_live_" + r(B62, 99),
    "stripe_restricted_key": lambda: "rk_live_" + r(B62, 99),
    "stripe_webhook_secret": lambda: "whsec_" + r(B62, 32),
    "aws_access_key_id": lambda: "AKIA" + r(UP + "234567", 16),
    "aws_temp_access_key_id": lambda: "ASIA" + r(UP + "234567", 16),
    "google_api_key": lambda: "AIza" + r(B64URL, 35),
    "google_oauth_client_secret": lambda: "GOCSPX-" + r(B64URL, 28),
    "google_oauth_access_token": lambda: "ya29.a0" + r(B64URL, 150),
    "npm_token": lambda: "npm_" + r(B62, 36),
    "pypi_token": lambda: "pypi-AgEIcHlwaS5vcmc" + r(B64URL, 120),
    "huggingface_token": lambda: "hf_" + r(UP + LO, 34),
    "sendgrid_key": lambda: "SG." + r(B64URL, 22) + "." + r(B64URL, 43),
    "digitalocean_pat": lambda: "dop_v1_" + r(HEX, 64),
    "digitalocean_oauth": lambda: "doo_v1_" + r(HEX, 64),
    "vault_service_token": lambda: "hvs." + r(B64URL, 95),
    "vault_batch_token": lambda: "hvb." + r(B64URL, 150),
    "onepassword_service_token": lambda: "ops_eyJ" + r(B64, 300),
    "onepassword_secret_key": lambda: (
        f"A3-{r(UP + DI, 6)}-{r(UP + DI, 11)}-{r(UP + DI, 5)}-{r(UP + DI, 5)}-{r(UP + DI, 5)}"
    ),
    "doppler_token": lambda: "dp.pt." + r(B62, 43),
    "databricks_token": lambda: "dapi" + r(HEX, 32),
    "shopify_access_token": lambda: "shpat_" + r(HEX, 32),
    "shopify_shared_secret": lambda: "shpss_" + r(HEX, 32),
    "atlassian_api_token": lambda: "ATATT3" + r(B64URL, 186),
    "postman_api_key": lambda: f"PMAK-{r(HEX, 24)}-{r(HEX, 34)}",
    "linear_api_key": lambda: "lin_api_" + r(B62, 40),
    "replicate_token": lambda: "r8_" + r(B62, 37),
    "notion_token": lambda: "ntn_" + r(DI, 11) + r(B62, 35),
    "notion_legacy_secret": lambda: "secret_" + r(B62, 43),
    "twilio_api_key": lambda: "SK" + r(HEX, 32),
    "square_access_token": lambda: "EAAA" + r(B64URL, 60),
    "square_oauth_secret": lambda: "sq0csp-" + r(B64URL, 43),
    "tailscale_auth_key": lambda: f"tskey-auth-k{r(B62, 10)}CNTRL-{r(B62, 33)}",
    "tailscale_api_key": lambda: f"tskey-api-k{r(B62, 10)}CNTRL-{r(B62, 33)}",
    "age_secret_key": lambda: "AGE-SECRET-KEY-1" + r(BECH32, 58),
    "heroku_api_key_v2": lambda: "HRKU-AA" + r(B64URL, 58),
    "grafana_service_account": lambda: "glsa_" + r(B62, 32) + "_" + r(HEX, 8),
    "grafana_cloud_token": lambda: "glc_" + r(B64, 60) + "==",
    "sentry_user_token": lambda: "sntryu_" + r(HEX, 64),
    "new_relic_user_key": lambda: "NRAK-" + r(UP + DI, 27),
    "dynatrace_token": lambda: f"dt0c01.{r(UP + DI, 24)}.{r(UP + DI, 64)}",
    "pulumi_token": lambda: "pul-" + r(HEX, 40),
    "planetscale_token": lambda: "pscale_tkn_" + r(B64URL, 43),
    "planetscale_password": lambda: "pscale_pw_" + r(B64URL, 43),
    "prefect_key": lambda: "pnu_" + r(B62, 36),
    "rubygems_key": lambda: "rubygems_" + r(HEX, 48),
    "clojars_token": lambda: "CLOJARS_" + r(LO + DI, 60),
    "flyio_token": lambda: "fo1_" + r(B64URL, 43),
    "frameio_token": lambda: "fio-u-" + r(B64URL, 64),
    "duffel_token": lambda: "duffel_live_" + r(B64URL, 43),
    "easypost_key": lambda: "EZAK" + r(B62, 54),
    "brevo_key": lambda: f"xkeysib-{r(HEX, 64)}-{r(B62, 16)}",
    "shippo_token": lambda: "shippo_live_" + r(HEX, 40),
    "readme_key": lambda: "rdme_" + r(LO + DI, 70),
    "scalingo_token": lambda: "tk-us-" + r(B64URL, 48),
    "perplexity_key": lambda: "pplx-" + r(B62, 48),
    "groq_key": lambda: "gsk_" + r(B62, 52),
    "xai_key": lambda: "xai-" + r(B62, 80),
    "openrouter_key": lambda: "sk-or-v1-" + r(HEX, 64),
    "tavily_key": lambda: "tvly-" + r(B62, 32),
    "langsmith_key": lambda: f"lsv2_pt_{r(HEX, 32)}_{r(HEX, 10)}",
    "artifactory_key": lambda: "AKCp" + r(B62, 69),
    "infracost_key": lambda: "ico-" + r(B62, 32),
    "maxmind_key": lambda: f"{r(B62, 6)}_{r(B62, 29)}_mmk",
    "dockerhub_pat": lambda: "dckr_pat_" + r(B64URL, 27),
    "terraform_cloud_token": lambda: f"{r(B62, 14)}.atlasv1.{r(B64URL, 67)}",
    "supabase_token": lambda: "sbp_" + r(HEX, 40),
    "render_key": lambda: "rnd_" + r(B62, 32),
    "airtable_pat": lambda: f"pat{r(B62, 14)}.{r(HEX, 64)}",
    "mailchimp_key": lambda: r(HEX, 32) + "-us" + str(R.randint(10, 21)),
    "bitbucket_app_password": lambda: "ATBB" + r(B62, 32),
    "contentful_pat": lambda: "CFPAT-" + r(B64URL, 43),
    "yandex_api_key": lambda: "AQVN" + r(B64URL, 36),
    "alibaba_access_key": lambda: "LTAI" + r(B62, 20),
    "tencent_secret_id": lambda: "AKID" + r(B62, 32),
    "jwt": jwt,
    "discord_bot_token": lambda: f"M{r(B62, 25)}.{r(B64URL, 6)}.{r(B64URL, 38)}",
    "telegram_bot_token": lambda: f"{r(DI, 10)}:AA{r(B64URL, 33)}",
    "mapbox_secret_token": lambda: "sk.eyJ1" + r(B64URL, 80) + "." + r(B64URL, 22),
    "openshift_token": lambda: "sha256~" + r(B64URL, 43),
    "azure_ad_client_secret": lambda: r(B62, 3) + "8Q~" + r(B64URL.replace("-", "~"), 34),
    "circleci_token": lambda: "CCIPAT_" + r(B62, 22) + "_" + r(HEX, 40),
    "deepseek_key": lambda: "sk-" + r(HEX, 32),
    "firecrawl_key": lambda: "fc-" + r(HEX, 32),
    "cloudflare_origin_ca": lambda: f"v1.0-{r(HEX, 24)}-{r(HEX, 146)}",
}


def shell_env(name: str) -> Callable[[str], str]:
    return lambda v: f"export {name}={v}"


def _aws_creds(v: str) -> str:
    return (
        "[default]\naws_access_key_id = AKIA"
        + r(UP + "234567", 16)
        + f"\naws_secret_access_key = {v}\nregion = eu-west-1"
    )


def _kubeconfig_token(v: str) -> str:
    return (
        "users:\n- name: ci-bot\n  user:\n    token: " + v + "\ncontexts:\n- name: prod\n"
        "  context:\n    cluster: prod\n    user: ci-bot"
    )


def _kubeconfig_key(v: str) -> str:
    return (
        "users:\n- name: admin\n  user:\n    client-certificate-data: "
        + "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"
        + "\n    client-key-data: "
        + v
    )


def _k8s_secret(v: str) -> str:
    return (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-creds\n  namespace: billing\n"
        f"type: Opaque\ndata:\n  username: YmlsbGluZw==\n  password: {v}\n"
    )


def _docker_config(v: str) -> str:
    return json.dumps({"auths": {"registry.gitlab.com": {"auth": v}}}, indent=2)


def _gcp_sa(v: str) -> str:
    return json.dumps(
        {
            "type": "service_account",
            "project_id": "acme-prod-4821",
            "private_key_id": r(HEX, 40),
            "private_key": v + "\n",
            "client_email": "ci@acme-prod-4821.iam.gserviceaccount.com",
        }
    )


# kind -> (value maker, snippet maker); the value is what must vanish.
CONTEXT: dict[str, tuple[Callable[[], str], Callable[[str], str]]] = {
    "aws_secret_access_key": (lambda: r(B64, 40), _aws_creds),
    "aws_session_token": (lambda: "IQoJb3JpZ2luX2Vj" + r(B64, 300), shell_env("AWS_SESSION_TOKEN")),
    "azure_storage_account_key": (
        lambda: b64(64),
        lambda v: (
            "DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey="
            + v
            + ";EndpointSuffix=core.windows.net"
        ),
    ),
    "azure_sas_signature": (
        lambda: base64.b64encode(R.randbytes(32)).decode().replace("+", "%2B").replace("/", "%2F"),
        lambda v: (
            "https://acmelogs.blob.core.windows.net/exports/q3.csv?sv=2022-11-02&ss=b"
            f"&srt=o&sp=r&se=2026-01-01T00:00:00Z&sig={v}"
        ),
    ),
    "mailgun_key": (lambda: "key-" + r(HEX, 32), shell_env("MAILGUN_API_KEY")),
    "twilio_auth_token": (lambda: r(HEX, 32), shell_env("TWILIO_AUTH_TOKEN")),
    "okta_api_token": (
        lambda: "00" + r(B64URL, 40),
        lambda v: f"curl -H 'Authorization: SSWS {v}' https://acme.okta.com/api/v1/users",
    ),
    "cohere_key": (lambda: r(B62, 40), lambda v: f'COHERE_API_KEY="{v}"'),
    "mistral_key": (lambda: r(B62, 32), lambda v: f"MISTRAL_API_KEY={v}"),
    "cloudflare_api_token": (lambda: r(B64URL, 40), lambda v: f"CLOUDFLARE_API_TOKEN={v}"),
    "vercel_token": (lambda: r(B62, 24), lambda v: f"vercel deploy --prod --token {v}"),
    "netlify_token": (lambda: "nfp_" + r(B62, 36), lambda v: f"NETLIFY_AUTH_TOKEN: {v}"),
    "algolia_admin_key": (lambda: r(HEX, 32), lambda v: f'algolia:\n  adminApiKey: "{v}"'),
    "snyk_token": (lambda: str(uuid.UUID(int=R.getrandbits(128))), shell_env("SNYK_TOKEN")),
    "heroku_api_key": (
        lambda: str(uuid.UUID(int=R.getrandbits(128))),
        lambda v: f'{{"HEROKU_API_KEY": "{v}"}}',
    ),
    "launchdarkly_sdk_key": (
        lambda: "sdk-" + str(uuid.UUID(int=R.getrandbits(128))),
        lambda v: f"launchdarkly:\n  sdk_key: {v}",
    ),
    "confluent_secret": (lambda: r(B64, 64), lambda v: f"sasl.password={v}"),
    "ibm_cloud_api_key": (lambda: r(B64URL, 44), lambda v: f"ibmcloud login --apikey {v}"),
    "datadog_api_key": (lambda: r(HEX, 32), lambda v: f"DD_API_KEY={v} datadog-agent run"),
    "fastly_token": (lambda: r(B64URL, 32), lambda v: f"FASTLY_API_TOKEN='{v}'"),
    "django_secret_key": (
        lambda: "django-insecure-" + r(LO + DI + "!@#%^&*(-_=+)", 50),
        lambda v: f"SECRET_KEY = '{v}'",
    ),
    "rails_secret_key_base": (lambda: r(HEX, 128), lambda v: f"secret_key_base: {v}"),
    "jwt_signing_secret": (lambda: r(B64, 48), lambda v: f"JWT_SECRET={v}"),
    "webhook_secret": (lambda: r(B62, 32), lambda v: f'"webhookSecret": "{v}",'),
    "session_cookie": (
        lambda: r(B64URL, 48),
        lambda v: f"curl -b 'sessionid={v}' https://admin.acme.dev/api/me",
    ),
    "set_cookie_session": (
        lambda: r(B64URL, 40) + "." + r(B64URL, 27),
        lambda v: f"< Set-Cookie: session={v}; Path=/; HttpOnly; Secure",
    ),
    "bearer_header": (
        lambda: r(B64URL, 40),
        lambda v: f'-H "Authorization: Bearer {v}"',
    ),
    "token_auth_header": (
        lambda: r(HEX, 40),
        lambda v: f"Authorization: token {v}",
    ),
    "basic_auth_header": (
        lambda: base64.b64encode(f"deploy:{pw()}".encode()).decode(),
        lambda v: f"Authorization: Basic {v}",
    ),
    "api_key_header": (lambda: r(B62, 32), lambda v: f"X-API-Key: {v}"),
    "gitlab_private_token_header": (
        lambda: r(B64URL, 20),
        lambda v: f'curl --header "PRIVATE-TOKEN: {v}" https://gitlab.acme.dev/api/v4/projects',
    ),
    "postgres_url_password": (
        pw,
        lambda v: f"DATABASE_URL=postgresql://billing:{v}@db.internal:5432/billing",
    ),
    "redis_url_password": (lambda: r(B62, 24), lambda v: f"redis://:{v}@cache.internal:6379/0"),
    "mongodb_srv_password": (
        pw,
        lambda v: f'MONGO_URI="mongodb+srv://app:{v}@cluster0.ab1cd.mongodb.net/prod"',
    ),
    "amqp_url_password": (pw, lambda v: f"broker_url = 'amqp://celery:{v}@mq.internal:5672//'"),
    "git_credential_url": (
        lambda: "ghp_" + r(B62, 36),
        lambda v: f"https://octocat:{v}@github.com",
    ),
    "pip_index_url_password": (
        lambda: r(B62, 20),
        lambda v: f"[global]\nindex-url = https://deploy:{v}@pypi.acme.dev/simple",
    ),
    "pgpass_line": (pw, lambda v: f"db.internal:5432:billing:billing_app:{v}"),
    "pgpass_wildcard": (pw, lambda v: f"*:*:*:postgres:{v}"),
    "netrc_machine": (
        lambda: r(B62, 20),
        lambda v: f"machine api.github.com\n  login octocat\n  password {v}",
    ),
    "netrc_default": (pw, lambda v: f"default login anonymous password {v}"),
    "maven_settings_password": (
        pw,
        lambda v: (
            "<server>\n  <id>nexus</id>\n  <username>deploy</username>\n"
            f"  <password>{v}</password>\n</server>"
        ),
    ),
    "nuget_cleartext_password": (
        pw,
        lambda v: f'<add key="ClearTextPassword" value="{v}" />',
    ),
    "xml_attribute_password": (
        pw,
        lambda v: f'<datasource url="jdbc:mysql://db/app" user="app" password="{v}"/>',
    ),
    "docker_config_auth": (
        lambda: base64.b64encode(f"gitlab-ci-token:{r(B62, 20)}".encode()).decode(),
        _docker_config,
    ),
    "kubeconfig_token": (lambda: jwt(), _kubeconfig_token),
    "kubeconfig_client_key_data": (
        lambda: base64.b64encode(pem("RSA PRIVATE KEY", 3).encode()).decode(),
        _kubeconfig_key,
    ),
    "k8s_secret_data": (lambda: base64.b64encode(pw().encode()).decode(), _k8s_secret),
    "npmrc_auth_token": (
        lambda: r(B62, 36),
        lambda v: f"//npm.pkg.github.com/:_authToken={v}",
    ),
    "npmrc_auth": (
        lambda: base64.b64encode(f"ci:{pw()}".encode()).decode(),
        lambda v: f"_auth={v}\nalways-auth=true",
    ),
    "env_npm_auth": (lambda: r(B64, 32), lambda v: f"NPM_AUTH={v}"),
    "env_sshpass": (pw, lambda v: f"SSHPASS={v} sshpass -e ssh deploy@web1"),
    "env_tf_token": (
        lambda: f"{r(B62, 14)}.atlasv1.{r(B64URL, 67)}",
        lambda v: f"TF_TOKEN_app_terraform_io={v}",
    ),
    "env_op_session": (lambda: r(B64URL, 43), lambda v: f'export OP_SESSION_my="{v}"'),
    "env_pgpassword": (pw, lambda v: f"PGPASSWORD={v} psql -h db.internal -U billing"),
    "env_vault_token": (lambda: "hvs." + r(B64URL, 24), lambda v: f"VAULT_TOKEN={v}"),
    "env_rsync_password": (pw, lambda v: f"RSYNC_PASSWORD={v} rsync -av src/ backup::data"),
    "env_ci_registry_password": (lambda: r(B64URL, 20), lambda v: f"CI_REGISTRY_PASSWORD={v}"),
    "docker_login_p": (
        lambda: r(B64URL, 28),
        lambda v: f"docker login -u deploy -p {v} registry.acme.dev",
    ),
    "mysql_attached_p": (pw, lambda v: f"mysql -h db.internal -u root -p{v} billing < dump.sql"),
    "sshpass_p": (pw, lambda v: f"sshpass -p '{v}' ssh -o StrictHostKeyChecking=no pi@10.0.0.7"),
    "httpie_auth": (pw, lambda v: f"http --auth admin:{v} POST https://api.acme.dev/v1/jobs"),
    "httpie_a": (pw, lambda v: f"http -a deploy:{v} GET api.acme.dev/status"),
    "curl_user": (pw, lambda v: f"curl -u admin:{v} https://jenkins.acme.dev/api/json"),
    "redis_cli_a": (lambda: r(B62, 24), lambda v: f"redis-cli -h cache.internal -a {v} ping"),
    "ldapsearch_w": (pw, lambda v: f'ldapsearch -x -D "cn=admin,dc=acme" -w {v} -b dc=acme'),
    "sqlcmd_P": (pw, lambda v: f"sqlcmd -S db.acme.local -U sa -P {v} -Q 'SELECT 1'"),
    "openssl_passin": (pw, lambda v: f"openssl pkcs12 -in cert.p12 -passin pass:{v} -nodes"),
    "keytool_storepass": (pw, lambda v: f"keytool -list -keystore app.jks -storepass {v}"),
    "smbclient_user_pass": (pw, lambda v: f"smbclient //nas/share -U backup%{v}"),
    "sevenzip_p": (pw, lambda v: f"7z x backup.7z -p{v} -o/tmp/restore"),
    "password_flag": (pw, lambda v: f"mongodump --username admin --password {v} --out /backup"),
    "wget_password": (pw, lambda v: f"wget --user=ftp --password={v} ftp://files.acme.dev/x.tgz"),
    "ini_password": (pw, lambda v: f"[database]\nhost = db.internal\npassword = {v}\n"),
    "toml_password": (pw, lambda v: f'[postgres]\nuser = "app"\npassword = "{v}"'),
    "yaml_password": (pw, lambda v: f"spring:\n  datasource:\n    password: {v}\n"),
    "php_array_password": (pw, lambda v: f"'password' => '{v}',"),
    "json_client_secret": (lambda: r(B64URL, 40), lambda v: f'{{"client_secret": "{v}"}}'),
    "sql_create_user": (pw, lambda v: f"CREATE USER app WITH PASSWORD '{v}';"),
    "mysql_identified_by": (pw, lambda v: f"ALTER USER 'app'@'%' IDENTIFIED BY '{v}';"),
    "prose_sudo_password": (pw, lambda v: f"my sudo password is {v} if you need it"),
    "prose_wifi_password": (pw, lambda v: f"the wifi password: {v}"),
    "prose_db_pw": (pw, lambda v: f"pw for the db is {v}, user is admin"),
    "prose_passphrase": (
        pw,
        lambda v: f"The passphrase for the deploy key is {v} — please don't share it.",
    ),
    "prose_login_with_password": (pw, lambda v: f"log in as admin with password {v}"),
    "prose_api_key": (lambda: r(HEX, 32), lambda v: f"and the api key is {v} for staging"),
    "prose_token_is": (lambda: r(B62, 30), lambda v: f"My token for the staging API is {v}."),
    "generic_random_secret": (lambda: r(B62, 40), lambda v: f"client_secret={v}"),
    "gcp_service_account_key": (lambda: pem("PRIVATE KEY", 8), _gcp_sa),
    "pem_rsa_private_key": (lambda: pem("RSA PRIVATE KEY"), lambda v: v),
    "pem_ec_private_key": (lambda: pem("EC PRIVATE KEY", 3), lambda v: f"cat key.pem\n{v}"),
    "pem_encrypted_private_key": (lambda: pem("ENCRYPTED PRIVATE KEY"), lambda v: v),
    "openssh_private_key": (lambda: pem("OPENSSH PRIVATE KEY"), lambda v: v),
    "pgp_private_key_block": (
        lambda: (
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
            + "\n".join(r(B64, 64) for _ in range(6))
            + "\n="
            + r(B64, 4)
            + "\n-----END PGP PRIVATE KEY BLOCK-----"
        ),
        lambda v: v,
    ),
    "putty_private_key": (
        lambda: "\n".join(r(B64, 64) for _ in range(4)),
        lambda v: (
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n"
            "Comment: deploy@web\nPublic-Lines: 2\n"
            + r(B64, 64)
            + "\n"
            + r(B64, 16)
            + "\nPrivate-Lines: 4\n"
            + v
            + "\nPrivate-MAC: "
            + r(HEX, 64)
        ),
    ),
    "hcp_client_secret": (lambda: r(B64URL, 64), lambda v: f"HCP_CLIENT_SECRET={v}"),
    "discord_webhook": (
        lambda: r(B64URL, 68),
        lambda v: f"https://discord.com/api/webhooks/{r(DI, 18)}/{v}",
    ),
    "slack_webhook": (
        lambda: r(B62, 24),
        lambda v: f"https://hooks.slack.com/services/T{r(UP + DI, 8)}/B{r(UP + DI, 10)}/{v}",
    ),
    "teams_webhook": (
        lambda: r(HEX, 32),
        lambda v: (
            f"https://acme.webhook.office.com/webhookb2/{uuid.UUID(int=R.getrandbits(128))}"
            f"@{uuid.UUID(int=R.getrandbits(128))}/IncomingWebhook/{v}/"
            f"{uuid.UUID(int=R.getrandbits(128))}"
        ),
    ),
    "url_query_token": (
        lambda: r(B62, 32),
        lambda v: f"GET https://api.acme.dev/v2/export?format=csv&access_token={v}",
    ),
}


# --- carriers: where a bare token sits, per source --------------------------------------------
def carriers(source: str) -> list[Callable[[str], str]]:
    common = [
        lambda v: f"here it is: {v}",
        lambda v: f"I pasted {v} into the settings page but the request still returns 401.",
        lambda v: f'{{"id": 42, "name": "ci", "value": "{v}"}}',
        lambda v: f"config:\n  endpoint: https://api.acme.dev\n  credential: {v}\n",
        lambda v: f"export SERVICE_CRED={v}",
        lambda v: f"$ echo {v} | wc -c\n      61",
    ]
    if source == "codex":
        return [
            *common,
            lambda v: f"Command: cat .env.local\nOutput:\nPORT=3000\nLOG_LEVEL=debug\nX={v}\n",
            lambda v: f"exec_command: grep -rn '{v[:6]}' .\nsrc/config.ts:12:  key: '{v}',",
        ]
    if source == "claude_code":
        return [
            *common,
            lambda v: (
                f"I found the value in `deploy/values.yaml`:\n\n```yaml\nsecretValue: {v}\n```"
            ),
            lambda v: f"<tool_result>\n{v}\n</tool_result>",
        ]
    return [
        *common,
        lambda v: f"Fix 401 from the API when using {v}",  # a title
        lambda v: f"oops, I just realised I posted {v} in the team channel. what now?",
    ]


SOURCES = ["codex", "claude_code", "chat_import"]


def make_secrets() -> list[dict]:
    rows = []
    i = 0
    for kind, make in BARE.items():
        for _ in range(2):
            source = SOURCES[i % 3]
            value = make()
            carrier = R.choice(carriers(source))
            rows.append(
                {
                    "id": f"s{i:04d}",
                    "source": source,
                    "kind": kind,
                    "text": carrier(value),
                    "secret": value,
                }
            )
            i += 1
    for kind, (make, snippet) in CONTEXT.items():
        for _ in range(2):
            source = SOURCES[i % 3]
            value = make()
            text = snippet(value)
            if source == "claude_code" and R.random() < 0.5:
                text = (
                    f"I'll add it to the config:\n\n```\n{text}\n```\n\nThen restart the service."
                )
            elif source == "codex" and R.random() < 0.5:
                text = f"Command: cat {R.choice(['.env', 'config', 'notes.txt'])}\nOutput:\n{text}"
            rows.append(
                {"id": f"s{i:04d}", "source": source, "kind": kind, "text": text, "secret": value}
            )
            i += 1
    return rows


# --- near-misses: must come out unchanged -----------------------------------------------------
def sha(n: int = 40) -> str:
    return r(HEX, n)


WORDS = "alpha beta gamma delta ledger invoice tenant shard replica cursor window batch".split()  # noqa: SIM905


def ident_camel() -> str:
    parts = R.sample(
        [
            "get",
            "user",
            "profile",
            "by",
            "id",
            "token",
            "refresh",
            "handler",
            "async",
            "factory",
            "session",
            "key",
            "secret",
            "provider",
            "manager",
            "config",
            "loader",
            "v2",
            "cache",
        ],
        k=R.randint(3, 6),
    )
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


def ident_snake() -> str:
    return "_".join(
        R.sample(
            [
                "test",
                "redact",
                "token",
                "secret",
                "keeps",
                "prose",
                "about",
                "api",
                "key",
                "password",
                "reset",
                "flow",
                "handles",
                "empty",
                "value",
                "v2",
            ],
            k=R.randint(3, 7),
        )
    )


NEAR: dict[str, Callable[[], str]] = {
    "git_sha_commit": lambda: f"commit {sha()}\nAuthor: Mara <mara@example.com>",
    "git_sha_short": lambda: f"Fixed in {sha(R.randint(7, 12))} (see the PR)",
    "git_sha_range": lambda: f"git diff {sha(7)}..{sha(7)} -- src/",
    "git_sha_log": lambda: "\n".join(f"{sha(7)} {R.choice(WORDS)}: tidy" for _ in range(3)),
    "git_sha256_object": lambda: f"object {sha(64)}",
    "sha256sum_output": lambda: f"{sha(64)}  dist/memory_pipeline-0.{R.randint(1, 9)}.0.tar.gz",
    "md5_output": lambda: f"{sha(32)}  ubuntu-24.04-live-server-amd64.iso",
    "sha256_prefixed": lambda: f"image: ghcr.io/acme/api@sha256:{sha(64)}",
    "docker_image_id": lambda: f"Successfully built {sha(12)}\nSuccessfully tagged api:latest",
    "container_id": lambda: f"CONTAINER ID   IMAGE\n{sha(12)}   postgres:16",
    "npm_integrity": lambda: (
        '"integrity": "sha512-' + base64.b64encode(R.randbytes(64)).decode() + '"'
    ),
    "go_sum": lambda: (
        f"golang.org/x/net v0.{R.randint(1, 40)}.0 h1:" + base64.b64encode(R.randbytes(32)).decode()
    ),
    "sri_hash": lambda: (
        '<script src="app.js" integrity="sha384-'
        + base64.b64encode(R.randbytes(48)).decode()
        + '"></script>'
    ),
    "nix_hash": lambda: 'hash = "sha256-' + base64.b64encode(R.randbytes(32)).decode() + '";',
    "uuid_prose": lambda: f"the job {uuid.UUID(int=R.getrandbits(128))} failed twice",
    "uuid_json": lambda: json.dumps(
        {
            "id": str(uuid.UUID(int=R.getrandbits(128))),
            "request_id": str(uuid.uuid5(uuid.NAMESPACE_DNS, r(LO, 8))),
        }
    ),
    "uuid_upper": lambda: f"ProjectGuid = {{{str(uuid.UUID(int=R.getrandbits(128))).upper()}}}",
    "ulid": lambda: f"event_id=01{r('0123456789ABCDEFGHJKMNPQRSTVWXYZ', 24)}",
    "semver": lambda: f"bumped to {R.randint(0, 9)}.{R.randint(0, 30)}.{R.randint(0, 99)}",
    "semver_pre": lambda: f"v{R.randint(1, 5)}.0.0-rc.{R.randint(1, 9)}+build.{R.randint(1, 999)}",
    "pip_pin": lambda: f"numpy=={R.randint(1, 2)}.{R.randint(0, 26)}.{R.randint(0, 9)}",
    "python_version": lambda: f"Python 3.{R.randint(8, 13)}.{R.randint(0, 12)} on linux",
    "camel_identifier": ident_camel,
    "snake_identifier": ident_snake,
    "dotted_module": lambda: (
        f"from memory_pipeline.capture.{R.choice(WORDS)} import {ident_camel()}"
    ),
    "java_class": lambda: (
        "org.springframework.boot.autoconfigure.security.oauth2.resource."
        + R.choice(["OAuth2ResourceServerAutoConfiguration", "JwtDecoderFactoryConfiguration"])
    ),
    "long_test_name": lambda: (
        "FAILED memory_pipeline_tests/capture/test_redact.py::test_" + ident_snake()
    ),
    "env_lookup_python": lambda: R.choice(
        [
            'api_key = os.environ["OPENAI_API_KEY"]',
            "token = os.getenv('GITHUB_TOKEN')",
            "password = getpass.getpass('DB password: ')",
            "secret = settings.SECRET_KEY",
            'headers = {"Authorization": f"Bearer {token}"}',
            "client = OpenAI(api_key=api_key)",
        ]
    ),
    "env_lookup_js": lambda: R.choice(
        [
            "const token = process.env.NPM_TOKEN;",
            "apiKey: process.env.STRIPE_SECRET_KEY,",
            "const { password } = req.body;",
            "headers: { Authorization: `Bearer ${accessToken}` }",
        ]
    ),
    "ci_secret_reference": lambda: R.choice(
        [
            "password: ${{ secrets.REGISTRY_PASSWORD }}",
            "NPM_TOKEN: ${{ secrets.NPM_TOKEN }}",
            'token: "{{ vault_github_token }}"',
            "api_key: ${API_KEY}",
            "DB_PASSWORD=$DB_PASSWORD",
        ]
    ),
    "placeholder": lambda: R.choice(
        [
            "OPENAI_API_KEY=sk-...",
            "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "password: <your-password>",
            "api_key: YOUR_API_KEY_HERE",
            'token = "REPLACE_ME"',
            "Authorization: Bearer <token>",
            "AWS_SECRET_ACCESS_KEY=****************",
        ]
    ),
    "prose_about_tokens": lambda: R.choice(
        [
            "GitHub personal access tokens start with ghp_ and fine-grained ones with github_pat_.",
            "Rotate the deploy token every 90 days and keep it in the vault.",
            "The password must be at least 12 characters long.",
            "the password is stored in 1Password, ask Mara for access",
            "my password is too short according to the validator",
            "the password is incorrect, the server says",
            "We keep the token budget at 4000 per context pack.",
            "Set the password to something strong before the demo.",
            "The api key is missing from the request headers.",
            "the wifi password is on the fridge",
            "password reset emails go through SendGrid",
            "a token is a sequence of characters the tokenizer produces",
        ]
    ),
    "code_password_handling": lambda: R.choice(
        [
            "if not check_password(password, user.password_hash):",
            "def rotate_token(self, token: str) -> str:",
            "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())",
            "token = jwt.encode(payload, key, algorithm='HS256')",
            "secret_key = Fernet.generate_key()",
            "parser.add_argument('--password', required=True)",
        ]
    ),
    "base64_of_words": lambda: base64.b64encode(" ".join(R.sample(WORDS, 5)).encode()).decode(),
    "base64_echo": lambda: (
        "echo "
        + base64.b64encode(f"hello {R.choice(WORDS)} world".encode()).decode()
        + " | base64 -d"
    ),
    "data_uri": lambda: (
        '<img src="data:image/png;base64,iVBORw0KGgo'
        + base64.b64encode(R.randbytes(60)).decode()
        + '">'
    ),
    "file_path": lambda: R.choice(
        [
            "/usr/lib/x86_64-linux-gnu/libssl.so.3",
            "node_modules/.pnpm/@babel+core@7.23.2/node_modules/@babel/core/lib/index.js",
            "~/.cache/huggingface/hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/"
            + sha(),
            f"/tmp/pytest-of-root/pytest-{R.randint(1, 99)}/test_store0/home",
            "C:\\Users\\mara\\AppData\\Local\\Programs\\Python\\Python312\\python.exe",
        ]
    ),
    "url_plain": lambda: R.choice(
        [
            f"https://github.com/acme/api/blob/{sha()}/src/server.py#L42",
            "https://docs.python.org/3/library/secrets.html#secrets.token_urlsafe",
            "https://example.com/search?q=token+rotation&page=2&sort=desc",
            f"https://docs.google.com/spreadsheets/d/{r(B64URL, 44)}/edit#gid=0",
            f"https://www.youtube.com/watch?v={r(B64URL, 11)}",
        ]
    ),
    "url_user_no_password": lambda: R.choice(
        [
            "git@github.com:acme/api.git",
            "ssh://git@gitlab.acme.dev:2222/infra/terraform.git",
            "postgresql://billing@db.internal:5432/billing",
            "https://mara@bitbucket.org/acme/x.git",
        ]
    ),
    "ssh_public_key": lambda: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + r(B64, 43) + " mara@laptop",
    "ssh_rsa_public_key": lambda: "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ" + r(B64, 300) + " ci",
    "certificate_block": lambda: (
        "-----BEGIN CERTIFICATE-----\n"
        + "\n".join(r(B64, 64) for _ in range(5))
        + "\n-----END CERTIFICATE-----"
    ),
    "public_key_block": lambda: (
        "-----BEGIN PUBLIC KEY-----\n"
        + "\n".join(r(B64, 64) for _ in range(3))
        + "\n-----END PUBLIC KEY-----"
    ),
    "age_public_key": lambda: "age1" + r("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58),
    "aws_arn": lambda: f"arn:aws:iam::{r(DI, 12)}:role/service-role/{ident_camel()}",
    "aws_resource_id": lambda: f"i-{sha(17)} in vpc-{sha(8)} subnet-{sha(17)}",
    "k8s_configmap": lambda: (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n"
        "  LOG_LEVEL: info\n  FEATURE_FLAGS: search,brief\n"
    ),
    "mkdir_p": lambda: R.choice(
        [
            "mkdir -p /srv/app/logs",
            "docker run -p 8080:80 nginx",
            "ssh -p 2222 deploy@web1",
            "mysql -u root -p billing",
            "psql -h localhost -p 5432 -U app",
            "git log -p -3",
            "cp -p a.txt b.txt",
            "docker login -u deploy --password-stdin registry.acme.dev",
        ]
    ),
    "timestamps_ips": lambda: (
        f"2025-{R.randint(1, 12):02d}-{R.randint(1, 28):02d}T"
        f"{R.randint(0, 23):02d}:{R.randint(0, 59):02d}:{R.randint(0, 59):02d}Z "
        f"10.0.{R.randint(0, 255)}."
        f"{R.randint(1, 254)} GET /healthz 200"
    ),
    "mac_ipv6": lambda: (
        f"link/ether {':'.join(r(HEX, 2) for _ in range(6))} fe80::{r(HEX, 4)}:{r(HEX, 4)}"
    ),
    "stripe_object_id": lambda: R.choice(["cus_", "pi_", "ch_", "in_", "sub_"]) + r(B62, 14),
    "slack_channel_id": lambda: f"posted in C{r(UP + DI, 10)} by U{r(UP + DI, 10)}",
    "webpack_chunk": lambda: f"dist/assets/index-{r(B64URL, 8)}.js  142.3 kB",
    "hex_color_css": lambda: f"color: #{r(HEX, 6)}; background: #{r(HEX, 3)};",
    "numbers": lambda: f"took {R.randint(100, 99999)} ms, {R.randint(1, 10**9)} rows",
    "pgp_fingerprint": lambda: (
        "Key fingerprint = " + " ".join(r(HEX, 4).upper() for _ in range(10))
    ),
    "gpg_key_id": lambda: f"gpg --recv-keys {r(HEX, 16).upper()}",
    "ansible_vault": lambda: (
        "$ANSIBLE_VAULT;1.1;AES256\n" + "\n".join(r(DI + "abcdef", 80) for _ in range(3))
    ),
    "netrc_like_prose": lambda: "on that machine the login screen asks for a password first",
    "time_colons": lambda: (
        f"{R.randint(0, 23):02d}:{R.randint(0, 59):02d}:{R.randint(0, 59):02d}"
        f":{R.randint(0, 999):03d} worker started"
    ),
    "yaml_no_secret": lambda: "server:\n  port: 8080\n  host: 0.0.0.0\nlogging:\n  level: info\n",
    "json_token_counts": lambda: json.dumps(
        {
            "input_tokens": R.randint(1, 9999),
            "output_tokens": R.randint(1, 999),
            "cache_read_input_tokens": R.randint(0, 99999),
        }
    ),
    "secret_name_reference": lambda: R.choice(
        [
            "secretName: db-credentials",
            "secretKeyRef:\n  name: api\n  key: token",
            "token_endpoint: https://auth.acme.dev/oauth/token",
            "password_file: /run/secrets/db",
            "SECRET_NAME=prod/api/stripe",
            "TOKEN_TTL=3600",
            "key_id: primary",
        ]
    ),
    "long_word_identifier": lambda: "".join(
        w.capitalize()
        for w in R.sample(
            [
                "abstract",
                "singleton",
                "proxy",
                "factory",
                "bean",
                "token",
                "resolver",
                "strategy",
                "provider",
                "delegate",
                "adapter",
            ],
            6,
        )
    ),
    "markdown_table": lambda: "| kind | count |\n|---|---|\n| token | 12 |\n| password | 3 |",
    "email_address": lambda: f"mail {r(LO, 6)}.{r(LO, 7)}@{r(LO, 5)}.example.com about it",
    "test_fixture_hash": lambda: f'assert digest == "{sha(64)}"',
    "pip_hash": lambda: f"requests==2.32.3 \\\n    --hash=sha256:{sha(64)}",
    "lockfile_entry": lambda: (
        f'resolved "https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz#{sha()}"'
    ),
    "chat_title": lambda: R.choice(
        [
            "Token rotation plan for Q3",
            "Why does the password reset mail bounce?",
            "Secret management: Vault vs SOPS",
            "Debugging 401 with the GitHub App token",
            "API key scopes for the billing service",
        ]
    ),
}


def make_near_misses() -> list[dict]:
    rows = []
    i = 0
    per_kind = -(-330 // len(NEAR))  # ceil: at least 330 rows
    for kind, make in NEAR.items():
        for _ in range(per_kind):
            source = SOURCES[i % 3]
            text = make()
            if source == "claude_code" and R.random() < 0.3:
                text = f"Here is what I found:\n\n```\n{text}\n```"
            elif source == "codex" and R.random() < 0.3:
                text = f"Command: rg -n . src/\nOutput:\n{text}"
            rows.append({"id": f"n{i:04d}", "source": source, "kind": kind, "text": text})
            i += 1
    return rows


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    secrets = make_secrets()
    near = make_near_misses()
    for name, rows in (("secrets.jsonl", secrets), ("near_misses.jsonl", near)):
        with (OUT / name).open("w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    kinds = {row["kind"] for row in secrets}
    print(
        f"{len(secrets)} secrets of {len(kinds)} kinds, {len(near)} near-misses of "
        f"{len({row['kind'] for row in near})} kinds -> {OUT}"
    )
    # a fingerprint so the README can say which set was measured
    digest = hashlib.sha256(
        b"".join((OUT / n).read_bytes() for n in ("secrets.jsonl", "near_misses.jsonl"))
    ).hexdigest()[:12]
    print(f"set fingerprint {digest}")


if __name__ == "__main__":
    main()
