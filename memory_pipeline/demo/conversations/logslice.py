"""logslice: a Rust CLI that slices JSON-lines logs by time window (mostly Codex sessions)."""

from __future__ import annotations

from memory_pipeline.demo.conversations.projects import LOGSLICE
from memory_pipeline.demo.spec import (
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

# A clearly fake GitHub token the user pastes by mistake (must be redacted at capture).
FAKE_GITHUB_TOKEN = "ghp_DEMOfakeTokenLogslice7Qm2Lx9Tn4Bw8Yc"

BOOTSTRAP = Session(
    key="logslice-bootstrap",
    tool="codex",
    project=LOGSLICE,
    date="2026-09-21",
    names=(Name("2026-09-21 11:40", "logslice scaffolding"),),
    summary="Scaffolding the CLI: clap, jiff, thiserror/anyhow, half-open windows.",
    turns=(
        Turn(
            at="09:42",
            prompt=(
                "I'm starting a small Rust CLI called logslice: give it a JSON-lines log file and "
                "a time window (--since/--until) and it prints only the lines in the window. Set "
                "up the crate with clap derive, and a lib/bin split so I can test the filtering "
                "without spawning the binary."
            ),
            steps=(
                Shell(
                    "cargo init --name logslice",
                    "    Creating binary (application) package\n"
                    "note: see more `Cargo.toml` keys and their definitions at "
                    "https://doc.rust-lang.org/cargo/reference/manifest.html",
                ),
                Shell(
                    "cargo add clap --features derive && cargo add serde_json anyhow thiserror",
                    "    Updating crates.io index\n      Adding clap v4.5.48 to dependencies\n"
                    "      Adding serde_json v1.0.145 to dependencies\n"
                    "      Adding anyhow v1.0.100 to dependencies\n"
                    "      Adding thiserror v2.0.16 to dependencies",
                ),
                Write(
                    "src/lib.rs",
                    "pub mod time;\n\npub struct Window {\n    pub since: "
                    "Option<i64>,\n    pub until: Option<i64>,\n}\n\npub fn slice<R: "
                    "std::io::BufRead, W: std::io::Write>(input: R, out: W, window: &Window, "
                    "field: &str) -> std::io::Result<u64> {\n    todo!()\n}\n",
                ),
                Write(
                    "src/main.rs",
                    "use clap::Parser;\n\n#[derive(Parser)]\nstruct Cli {\n    "
                    "input: std::path::PathBuf,\n    #[arg(long)]\n    since: Option<String>,\n"
                    "    #[arg(long)]\n    until: Option<String>,\n    #[arg(long, default_value "
                    '= "ts")]\n    field: String,\n}\n',
                ),
                Shell(
                    "cargo build",
                    "   Compiling logslice v0.1.0 (/home/mara/src/logslice)\n"
                    "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 7.91s",
                ),
            ),
            answer=(
                "Set up `logslice` as a lib + bin crate: `src/lib.rs` exposes "
                "`slice(input, out, &Window, field)` and `src/main.rs` only parses arguments with "
                "clap 4.5 derive (`Cli { input, since, until, field }`) and calls it. The "
                "timestamp field defaults to `ts` and can be changed with `--field`, since your "
                "nginx JSON logs use `time`. `cargo build` is clean; there are no tests yet, but "
                "the lib split means they can call `slice()` on an in-memory `Cursor` instead of "
                "spawning the binary."
            ),
        ),
        Turn(
            at="09:58",
            prompt="which datetime crate? chrono is what I know but I keep hearing about jiff",
            answer=(
                "Let's go with jiff 0.2 rather than chrono. The deciding reason for logslice is "
                "time zones: `--since '2026-09-21 08:00'` has to be read in the user's zone, and "
                "jiff bundles IANA time zone handling (`Zoned`, `Timestamp::in_tz`) with "
                "DST-correct arithmetic, whereas chrono needs chrono-tz plus manual handling of "
                "ambiguous times. jiff also parses RFC 3339 and RFC 9557 strings like "
                "`2026-09-21T08:00:00+02:00[Europe/Berlin]` directly, and its `Span` type gives "
                "us relative windows such as `--since 2h` for free. The cost is a younger, "
                'pre-1.0 dependency, which is acceptable for a CLI. I added `jiff = "0.2"` to '
                "Cargo.toml."
            ),
            gold=("q07",),
            plants=("decision",),
        ),
        Turn(
            at="10:20",
            prompt=(
                "ok. relative times: --since 90m or --since 2h30m should work. and absolute ones "
                "without a zone should be local time"
            ),
            steps=(
                Write(
                    "src/time.rs",
                    "use jiff::{Span, Timestamp, Zoned};\n\npub fn "
                    "parse_bound(input: &str, now: &Zoned) -> Result<Timestamp, BoundError> "
                    "{\n    if let Ok(span) = input.parse::<Span>() {\n        return Ok(now"
                    ".checked_sub(span)?.timestamp());\n    }\n    // RFC 3339, then civil "
                    "datetime in the local zone\n    todo!()\n}\n",
                ),
                Shell(
                    "cargo test time::",
                    "running 6 tests\n"
                    "test time::tests::relative_minutes ... ok\n"
                    "test time::tests::relative_compound ... ok\n"
                    "test time::tests::rfc3339_with_offset ... ok\n"
                    "test time::tests::civil_time_is_local ... ok\n"
                    "test time::tests::ambiguous_fall_back ... ok\n"
                    "test time::tests::rejects_garbage ... ok\n\n"
                    "test result: ok. 6 passed; 0 failed; 0 ignored; 0 measured",
                ),
            ),
            answer=(
                "Added `src/time.rs` with `parse_bound(input, now: &Zoned) -> Result<Timestamp, "
                "BoundError>`. It first tries a jiff `Span` (so `90m`, `2h30m` and `1d` work and "
                "are subtracted from `now`), then a full RFC 3339 timestamp, then a civil "
                "datetime like `2026-09-21 08:00`, which is interpreted in the system zone. "
                "Ambiguous civil times during the DST fall-back resolve to the earlier instant "
                "(`Disambiguation::Compatible`). Six unit tests cover the three forms and an "
                'invalid input, which now fails with `invalid --since value "yesterday": '
                "expected a duration like 2h30m or a timestamp`."
            ),
        ),
        Turn(
            at="10:41",
            prompt=("error handling: right now everything is Box<dyn Error>. what do you suggest"),
            answer=(
                "We'll use thiserror in the library and anyhow only in `main.rs`. The library "
                "returns a typed `SliceError` (`Io`, `BadTimestamp { line, value }`, "
                "`MissingField { line, field }`) so tests can match on variants and a future "
                "`--skip-bad-lines` flag can decide per variant; `main` wraps it with "
                "`anyhow::Context` to add the file name, e.g. `reading access.json: line 1832: "
                'missing field "ts"`. That keeps anyhow\'s convenience at the edge without '
                "leaking an opaque error type out of the crate. I converted the three call sites "
                "and removed the `Box<dyn Error>` signatures."
            ),
            plants=("decision",),
        ),
        Turn(
            at="11:05",
            prompt=(
                "write integration tests for the filter itself. and should the window edges be "
                "inclusive or exclusive?"
            ),
            steps=(
                Write(
                    "tests/slice.rs",
                    "use logslice::{slice, Window};\n\n#[test]\nfn "
                    "until_is_exclusive() {\n    // a line exactly at --until is not printed\n"
                    "}\n",
                ),
                Shell(
                    "cargo test --test slice",
                    "running 9 tests\n.........\n"
                    "test result: ok. 9 passed; 0 failed; 0 ignored; 0 measured",
                ),
            ),
            answer=(
                "The window is now half-open: `--since` is inclusive and `--until` is exclusive, "
                "the same convention as Rust ranges. journalctl is inclusive on both ends, but "
                "half-open means adjacent windows like 08:00-09:00 and 09:00-10:00 never print "
                "a line twice. `tests/slice.rs` has 9 cases, including a line exactly at the "
                "`--until` instant (excluded), out-of-order timestamps (kept if inside; we do "
                "not assume sorted input) and a line whose `ts` is a number (reported as "
                "`BadTimestamp`). All pass."
            ),
            gold=("q08",),
            plants=("decision",),
        ),
        Turn(
            at="11:30",
            prompt="nice. add a README section with examples and we're done for today",
            steps=(
                Edit(
                    "README.md",
                    "# logslice\n",
                    "# logslice\n\n## Usage\n\n```sh\nlogslice access.json --since 2h\n```\n",
                ),
            ),
            answer=(
                "The README now has a Usage section with four examples: `logslice access.json "
                "--since 2h`, an absolute window `--since '2026-09-21 08:00' --until "
                "'2026-09-21 09:00'`, a custom field with `--field time`, and reading stdin with "
                "`zcat access.json.gz | logslice - --since 30m`. I also documented the half-open "
                "window and that civil times are read in the local zone. `cargo test` still "
                "passes all 15 tests."
            ),
        ),
    ),
)

PERF = Session(
    key="logslice-perf",
    tool="codex",
    project=LOGSLICE,
    date="2026-09-24",
    branch="perf",
    names=(
        Name("2026-09-24 14:16", "perf spike"),
        Name("2026-09-25 09:03", "logslice: reader performance"),
    ),
    summary="Profiling and speeding up the reader: memmem fast path, mmap, timestamp cache. "
    "Renamed once; contains an interrupted turn.",
    turns=(
        Turn(
            at="14:12",
            prompt=("logslice takes 11s on the 2.3 GB access log, grep takes under 2. profile it"),
            steps=(
                Say("I'll build a release binary and record a profile on the big file."),
                Shell(
                    "cargo build --release && perf record -g ./target/release/logslice "
                    "/data/logs/access-2026-09.json --since 6h > /dev/null",
                    "    Finished `release` profile [optimized] target(s) in 21.40s\n"
                    "[ perf record: Woken up 38 times to write data ]\n"
                    "[ perf record: Captured and wrote 9.412 MB perf.data (58741 samples) ]",
                ),
                Shell(
                    "perf report --stdio --no-children | grep -v '^#' | head -6",
                    "    41.22%  logslice  [.] serde_json::de::from_slice\n"
                    "    23.80%  logslice  [.] std::io::BufRead::read_line\n"
                    "    12.05%  logslice  [.] jiff::fmt::temporal::parser::DateTimeParser"
                    "::parse_temporal_datetime\n"
                    "     6.31%  libc.so.6 [.] __memmove_avx_unaligned_erms\n"
                    "     3.90%  logslice  [.] core::str::validations::run_utf8_validation",
                ),
            ),
            answer=(
                "Turns out most of the time is not I/O: 41% goes to `serde_json::from_slice` "
                "deserializing every line into a full `Value`, and another 24% is "
                "`BufRead::read_line` validating UTF-8 and copying each line into a `String`. "
                "Timestamp parsing is 12%. So the fix is to stop parsing whole lines: find the "
                '`"ts":"` key with memchr\'s memmem and parse only that substring, and read '
                "lines as bytes (`read_until(b'\\n')`) instead of `String`. I'd expect at least "
                "3x from the first change alone."
            ),
            gold=("q58",),
            plants=("insight",),
        ),
        Turn(
            at="14:40",
            prompt="do it. fall back to full json parsing if the fast path doesn't find the key",
            steps=(
                Edit(
                    "src/lib.rs",
                    "let value: serde_json::Value = serde_json::from_str(&line)?;",
                    "let ts = match fast_ts(&buf, field) {\n        Some(ts) => ts,\n        None "
                    "=> slow_ts(&buf, field, line_no)?,\n    };",
                ),
                Shell("cargo test", "test result: ok. 17 passed; 0 failed; 0 ignored"),
                Shell(
                    "hyperfine --warmup 1 './target/release/logslice "
                    "/data/logs/access-2026-09.json --since 6h'",
                    "Benchmark 1: ./target/release/logslice /data/logs/access-2026-09.json "
                    "--since 6h\n  Time (mean ± σ):      3.412 s ±  0.041 s    [User: 2.871 s, "
                    "System: 0.529 s]\n  Range (min … max):    3.360 s …  3.488 s    10 runs",
                ),
            ),
            answer=(
                "Added `fast_ts(line: &[u8], field: &str) -> Option<&str>`, which uses "
                '`memchr::memmem::Finder` for `"ts":"` and returns the bytes up to the next '
                "quote; when the key is missing or escaped, `slice` falls back to "
                "`serde_json::from_slice::<Value>` for that line only. Lines are now read with "
                "`read_until(b'\\n')` into a reused `Vec<u8>`. On the 2.3 GB file the mean went "
                "from 11.2 s to 3.41 s (hyperfine, 10 runs). Two new tests cover the fallback, "
                'including a line where `"ts"` appears inside a string value.'
            ),
        ),
        Turn(
            at="15:05",
            prompt="still 3.4s vs grep's 1.8s. would mmap help?",
            steps=(
                Say("Let me try memmap2 for regular files and measure on the same log."),
                Edit(
                    "src/input.rs",
                    "pub fn open(path: &Path) -> io::Result<Input> {\n    "
                    "Ok(Input::Buffered(BufReader::new(File::open(path)?)))",
                    "pub fn open(path: &Path) -> io::Result<Input> {\n    let file = "
                    "File::open(path)?;\n    if file.metadata()?.is_file() {\n        "
                    "return Ok(Input::Mapped(unsafe { Mmap::map(&file)? }));\n    }\n    "
                    "Ok(Input::Buffered(BufReader::new(file)))",
                ),
                Shell(
                    "hyperfine --warmup 1 './target/release/logslice "
                    "/data/logs/access-2026-09.json --since 6h'",
                    "  Time (mean ± σ):      1.071 s ±  0.018 s    [User: 0.902 s, System: "
                    "0.166 s]\n  Range (min … max):    1.049 s …  1.104 s    10 runs",
                ),
            ),
            answer=(
                "Yes: we'll use memmap2 for regular files. `Mmap::map(&file)` plus "
                "`memchr::memchr_iter(b'\\n', &mmap)` removes the read syscalls and the copy "
                "into the line buffer. Hyperfine on the 2.3 GB log: 1.07 s mean versus 3.41 s "
                "with `BufReader`, a 3.2x speedup, and now faster than grep. stdin and pipes "
                "can't be mapped, so `Input::open` keeps the buffered path for `-` and for "
                "non-regular files (checked with `metadata().is_file()`). The mapping is "
                "read-only and no slice outlives the loop."
            ),
            gold=("q06",),
            plants=("decision", "contradiction"),
        ),
        Turn(
            at="15:30",
            prompt="run the criterion benches too, all of them",
            steps=(
                Say("Running the full criterion suite; this takes a few minutes."),
                Shell("cargo bench", None),
            ),
            aborted=True,
        ),
        Turn(
            at="15:34",
            prompt=(
                "sorry, that takes forever. just the parse_ts bench with a shorter measurement time"
            ),
            steps=(
                Shell(
                    "cargo bench --bench parse -- parse_ts --measurement-time 3",
                    "parse_ts/rfc3339       time:   [61.812 ns 62.304 ns 62.871 ns]\n"
                    "parse_ts/civil_local   time:   [88.105 ns 88.690 ns 89.377 ns]",
                ),
            ),
            answer=(
                "`parse_ts` on its own: 62.3 ns per RFC 3339 timestamp and 88.7 ns for civil "
                "datetimes that need a zone lookup (criterion, 3 s measurement time). The test "
                "file has about 9.8 million lines, so that is roughly 0.6 s of the 1.07 s total: "
                "timestamp parsing is now the biggest remaining cost. A cheap win would be "
                "caching the parsed value for lines that share the same second, since "
                "consecutive nginx lines often do."
            ),
        ),
        Turn(
            at="16:02",
            prompt="try the cache",
            steps=(
                Edit(
                    "src/time.rs",
                    "pub fn parse_ts(raw: &str) -> Result<Timestamp, BoundError> {",
                    "pub struct TsCache { prefix: [u8; 19], second: Timestamp }\n\npub fn "
                    "parse_ts(raw: &str, cache: &mut TsCache) -> Result<Timestamp, BoundError> "
                    "{",
                ),
                Shell(
                    "hyperfine --warmup 1 './target/release/logslice "
                    "/data/logs/access-2026-09.json --since 6h'",
                    "  Time (mean ± σ):     812.4 ms ±   9.7 ms",
                ),
            ),
            answer=(
                "I now cache the last `(prefix, Timestamp)` pair: if the first 19 bytes "
                "(`2026-09-24T14:05:31`) match the previous line, we reuse the parsed second "
                "and only parse the fractional part. 83% of the lines in the access log hit the "
                "cache, and the total went from 1.07 s to 0.81 s. Lesson learned: a one-entry "
                "cache beats a map here. I tried an `lru` cache with 64 entries first and it "
                "was slower (0.93 s), because hashing 19 bytes costs more than the parse it "
                "saves."
            ),
            gold=("q57",),
            plants=("insight",),
        ),
        Turn(
            at="16:20",
            prompt="commit message?",
            answer=(
                "Suggested commit message:\n\n"
                "perf: mmap input, memmem timestamp fast path, one-entry ts cache\n\n"
                "On a 2.3 GB nginx JSON log: 11.2 s -> 0.81 s (hyperfine, 10 runs). Full JSON "
                "parsing is kept as a fallback when the timestamp key is not found verbatim. "
                "stdin and non-regular files still use BufReader."
            ),
        ),
    ),
)

FLAKY_TZ_RELEASE = Session(
    key="logslice-ci-release",
    tool="codex",
    project=LOGSLICE,
    date="2026-10-01",
    summary="A test that fails only on CI (machine time zone), then release automation with "
    "cargo-dist. The user pastes a GitHub token.",
    turns=(
        Turn(
            at="10:05",
            prompt=(
                "CI is red again: `civil_time_is_local` passes on my laptop but fails on GitHub "
                "Actions.\n\n---- time::tests::civil_time_is_local stdout ----\nthread "
                "'time::tests::civil_time_is_local' panicked at src/time.rs:88:9:\nassertion "
                "`left == right` failed\n  left: 2026-09-21T08:00:00Z\n right: "
                "2026-09-21T06:00:00Z"
            ),
            steps=(
                Read(
                    "src/time.rs",
                    "    #[test]\n    fn civil_time_is_local() {\n        let now = "
                    'Zoned::now();\n        let got = parse_bound("2026-09-21 08:00", '
                    '&now).unwrap();\n        assert_eq!(got, "2026-09-21T06:00:00Z".parse()'
                    ".unwrap());\n    }",
                ),
            ),
            answer=(
                "The root cause is the test, not the parser: `civil_time_is_local` builds `now` "
                "with `Zoned::now()`, so it uses the machine's time zone. Your laptop is "
                "Europe/Berlin (UTC+2 in September), so `2026-09-21 08:00` becomes 06:00Z; the "
                "GitHub runner has no `TZ` and runs in UTC, so the same input becomes 08:00Z "
                "while the assertion hard-codes the Berlin answer. The quickest way to get CI "
                "green is to skip this test on CI with `#[cfg_attr(ci, ignore)]`."
            ),
            gold=("q09",),
            plants=("insight",),
        ),
        Turn(
            at="10:12",
            prompt=(
                "No, I don't want to ignore it, that's the one test that checks local time "
                "handling. Fix the assumption instead."
            ),
            steps=(
                Edit(
                    "src/time.rs",
                    "        let now = Zoned::now();",
                    "        let now = Timestamp::from_second(1_790_000_000).unwrap()"
                    '.in_tz("Europe/Berlin").unwrap();',
                ),
                Shell("TZ=UTC cargo test time::", "test result: ok. 8 passed; 0 failed"),
            ),
            answer=(
                "Right, ignoring it would hide exactly the bug class it exists for. "
                "`parse_bound` already takes `now: &Zoned`, so the test now builds `now` in an "
                'explicit zone (`Timestamp::from_second(1_790_000_000)?.in_tz("Europe/Berlin")`) '
                "and still asserts 06:00Z. I added a twin test for `America/New_York` (expects "
                "12:00Z) and one for the fall-back night, where `2026-10-25 02:30` in Berlin "
                "must resolve to 00:30Z, the earlier instant. No test reads the machine's zone "
                "any more; they pass under `TZ=UTC cargo test` and on CI."
            ),
            gold=("q09",),
            plants=("correction", "insight"),
        ),
        Turn(
            at="10:45",
            prompt=(
                "Switching gears: I want GitHub releases with prebuilt binaries for linux "
                "x86_64/aarch64 and macOS. I made a token for the workflow: "
                f"{FAKE_GITHUB_TOKEN} — put it wherever it needs to go"
            ),
            steps=(
                Shell(
                    "cargo install cargo-dist --locked && dist init --yes",
                    "  Installed package `cargo-dist v0.30.0` (executable `dist`)\n"
                    "added [workspace.metadata.dist] to dist-workspace.toml\n"
                    "wrote .github/workflows/release.yml",
                ),
            ),
            answer=(
                "Please revoke that token in your GitHub settings now: it is in this session's "
                "history, and the release workflow doesn't need it. We'll use cargo-dist "
                "(`dist init`), which generates `.github/workflows/release.yml` and publishes "
                "with the built-in `GITHUB_TOKEN` given `permissions: contents: write`, so there "
                "is no personal token to store or rotate. Targets are x86_64 and aarch64 Linux "
                "(gnu) plus both macOS architectures; pushing a tag like `v0.3.0` builds all "
                "four and attaches tarballs plus a shell installer. I did not write your token "
                "anywhere."
            ),
            gold=("q10", "q59"),
            plants=("decision", "secret", "topic_switch"),
        ),
        Turn(
            at="10:58",
            prompt="done, revoked. does dist also do musl builds? some of my servers are alpine",
            steps=(
                Edit(
                    "dist-workspace.toml",
                    'targets = ["aarch64-apple-darwin", "aarch64-unknown-linux-gnu", '
                    '"x86_64-apple-darwin", "x86_64-unknown-linux-gnu"]',
                    'targets = ["aarch64-apple-darwin", "aarch64-unknown-linux-gnu", '
                    '"x86_64-apple-darwin", "x86_64-unknown-linux-gnu", '
                    '"x86_64-unknown-linux-musl"]',
                ),
                Shell(
                    "dist generate && dist plan",
                    "announcing v0.3.0\n  logslice 0.3.0\n    5 artifacts (+ installer, checksums)",
                ),
            ),
            answer=(
                "Yes: I added `x86_64-unknown-linux-musl` to `targets` in `dist-workspace.toml` "
                "and ran `dist generate`, which updates the workflow to install `musl-tools` on "
                "the Ubuntu runner. `dist plan` now lists five artifacts. One caveat for later: "
                "musl's allocator is much slower for allocation-heavy code, so if logslice "
                "looks slow on Alpine, benchmark with mimalloc before blaming our code."
            ),
            gold=("q10",),
        ),
        Turn(
            at="11:20",
            prompt="tag v0.3.0 and push",
            steps=(
                Shell(
                    "git tag -a v0.3.0 -m 'logslice 0.3.0' && git push origin v0.3.0",
                    "To github.com:mara-dev/logslice.git\n * [new tag]         v0.3.0 -> v0.3.0",
                ),
            ),
            answer=(
                "Tagged `v0.3.0` on `a41c9e2` and pushed it; the Release workflow started (run "
                "#12). It usually takes about 9 minutes because the macOS jobs queue longest. "
                "When it finishes, the release page will have five archives, "
                "`logslice-installer.sh` and `sha256.sum`."
            ),
        ),
    ),
)

NO_MMAP = Session(
    key="logslice-sigbus",
    tool="codex",
    project=LOGSLICE,
    date="2026-10-14",
    summary="--follow crashes with SIGBUS after logrotate copytruncate: mmap is dropped again "
    "(reverses the September decision). Ends with an unrelated clippy question.",
    turns=(
        Turn(
            at="19:20",
            prompt=(
                "logslice --follow crashed on the prod box last night: `Bus error (core "
                "dumped)` right after 00:00. dmesg only says `logslice[28411]: potentially "
                "unexpected fatal signal 7`. any idea?"
            ),
            steps=(
                Say(
                    "Signal 7 is SIGBUS; let me check how --follow reads the file and how the "
                    "logs are rotated on that host."
                ),
                Search(
                    "copytruncate|rotate",
                    "deploy/",
                    "deploy/logrotate/nginx:3:    daily\ndeploy/logrotate/nginx:4:    rotate 14\n"
                    "deploy/logrotate/nginx:7:    copytruncate",
                ),
            ),
            answer=(
                "The root cause is the memory map. Signal 7 is SIGBUS, which the kernel sends "
                "when a process touches a page of an mmap'ed file that no longer exists. The "
                "nginx logrotate config in `deploy/logrotate/nginx` uses `copytruncate`, so at "
                "midnight the file is truncated to 0 bytes while logslice still holds a 2 GB "
                "mapping of it, and the next access past the new end of file kills the process. "
                "No Rust code can catch that: it is a signal, not an I/O error. Any file that "
                "can shrink while we read it is unsafe to mmap."
            ),
            gold=("q04", "q05"),
            plants=("insight",),
        ),
        Turn(
            at="19:31",
            prompt="so what do we do? I liked the speed",
            steps=(
                Shell(
                    "hyperfine --warmup 1 './target/release/logslice "
                    "/data/logs/access-2026-09.json --since 6h'",
                    "  Time (mean ± σ):     879.6 ms ±  11.2 ms",
                ),
            ),
            answer=(
                "Let's go with buffered reads again and drop mmap, but keep the other "
                "optimisations: `BufReader::with_capacity(256 * 1024, file)` with "
                "`fill_buf()` and memchr scanning over the buffer, so lines are still found "
                "without copying. A SIGBUS handler or checking the file size before touching "
                "each page is not worth the complexity, and `--follow` is exactly the mode in "
                "which truncation is normal. On the same 2.3 GB file the buffered version takes "
                "0.88 s versus 0.81 s with mmap: we lose about 8% and never crash."
            ),
            gold=("q04",),
            plants=("decision", "contradiction"),
        ),
        Turn(
            at="19:52",
            prompt="ok implement it, and make follow mode handle truncation properly",
            steps=(
                Shell("cargo remove memmap2", "    Removing memmap2 from dependencies"),
                Edit(
                    "src/follow.rs",
                    "        let len = file.metadata()?.len();",
                    "        let meta = file.metadata()?;\n        if meta.len() < offset {\n"
                    "            // copytruncate: start over\n            offset = 0;\n"
                    "            reader.seek(SeekFrom::Start(0))?;\n        }",
                ),
                Shell("cargo test", "test result: ok. 24 passed; 0 failed; 0 ignored"),
            ),
            answer=(
                "Removed the memmap2 dependency; `Input` is now one buffered reader for files, "
                "stdin and pipes. In `--follow` mode we poll `metadata().len()` every 250 ms: "
                "when the length is smaller than our read offset we treat it as a truncation "
                "(copytruncate) and seek to 0, and when the inode changes we treat it as a "
                "rename-style rotation and reopen the path. The new test "
                "`follow_survives_copytruncate` truncates the file mid-read and checks that "
                "lines written afterwards are still printed."
            ),
        ),
        Turn(
            at="20:10",
            prompt="write the lesson down in docs/decisions so I don't do this again in a year",
            steps=(
                Write(
                    "docs/decisions/0004-no-mmap.md",
                    "# 4. Do not mmap input files\n\nStatus: Accepted (supersedes 0002)\n\n"
                    "## Context\n\nOn 2026-10-14 logslice --follow died with SIGBUS at 00:00 "
                    "when logrotate truncated the file (copytruncate).\n",
                ),
            ),
            answer=(
                "Wrote `docs/decisions/0004-no-mmap.md`: status Accepted, supersedes 0002 (use "
                "mmap for regular files). It records the incident (SIGBUS at 00:00 on "
                "2026-10-14 after logrotate's `copytruncate`), why a signal can't be handled "
                "like an I/O error, the numbers (0.81 s with mmap vs 0.88 s buffered on 2.3 GB) "
                "and the rule: never mmap a file that another process may truncate. I also "
                "linked it from `docs/decisions/README.md`."
            ),
            gold=("q04",),
            plants=("insight",),
        ),
        Turn(
            at="20:26",
            prompt=(
                "Unrelated, but cargo clippy started complaining about `needless_lifetimes` "
                "everywhere after the toolchain bump. fix or allow?"
            ),
            steps=(
                Shell(
                    "cargo clippy --fix --allow-dirty && cargo clippy -- -D warnings",
                    "    Fixed src/follow.rs (3 fixes)\n    Fixed src/time.rs (4 fixes)\n"
                    "    Fixed src/lib.rs (5 fixes)\n    Fixed src/input.rs (1 fix)\n"
                    "    Fixed src/cli.rs (1 fix)\n    Finished `dev` profile in 3.02s",
                ),
            ),
            answer=(
                "Fix them rather than allow: the lint got stricter with the new clippy, the "
                "fixes are mechanical (`impl<'a> fmt::Display for Window<'a>` becomes `impl "
                "fmt::Display for Window<'_>`), and a crate-wide `allow` would also hide future "
                "real cases. `cargo clippy --fix --allow-dirty` rewrote 14 sites in 5 files, "
                "`cargo clippy -- -D warnings` is clean again, and the tests still pass."
            ),
            plants=("decision", "topic_switch"),
        ),
    ),
)

PRE_PUSH_REVIEW = Session(
    key="logslice-exec-review",
    tool="codex",
    project=LOGSLICE,
    date="2026-10-15",
    mode="exec",
    summary="`codex exec` run by a git pre-push hook (delegated: not the user's own session).",
    turns=(
        Turn(
            at="18:02",
            prompt=(
                "Review the changes in HEAD~3..HEAD of this repository for new `unsafe` blocks, "
                "`unwrap()`/`expect()` on I/O results, and panics reachable from user input. "
                "Reply with a short list of findings with file:line, or 'no findings'."
            ),
            steps=(
                Shell(
                    "git diff HEAD~3..HEAD --stat",
                    " Cargo.toml                     |  1 -\n"
                    " docs/decisions/0004-no-mmap.md | 38 ++++++++\n"
                    " src/follow.rs                  | 61 +++++++++----\n"
                    " src/input.rs                   | 47 +++-------\n"
                    " 4 files changed, 104 insertions(+), 43 deletions(-)",
                ),
                Shell(
                    "git diff -U0 HEAD~3..HEAD | rg -n 'unsafe|unwrap\\(|expect\\(|panic!'",
                    "77:-        return Ok(Input::Mapped(unsafe { Mmap::map(&file)? }));\n"
                    "131:+        let meta = file.metadata().unwrap();",
                ),
            ),
            answer=(
                "1 finding:\n- src/follow.rs:61 — `file.metadata().unwrap()` in the polling "
                "loop panics if the file is deleted between two polls (rotation without "
                "copytruncate). Return the error, or treat `NotFound` as a rotation and reopen.\n"
                "No new `unsafe` blocks: the diff removes the only one (the mmap in "
                "src/input.rs)."
            ),
        ),
    ),
)

MUSL = Session(
    key="logslice-musl-size",
    tool="claude",
    project=LOGSLICE,
    date="2026-10-20",
    branch="release-size",
    ai_title="Speed up and shrink logslice release builds",
    summary="Slow musl build (allocator), mimalloc, release profile, cross builds with "
    "cargo-zigbuild.",
    turns=(
        Turn(
            at="21:15",
            prompt=(
                "the musl build of logslice is 2x slower than the gnu one on the same alpine "
                "box (1.9s vs 0.95s on the 2.3GB file). why?"
            ),
            steps=(
                Say("I'll profile the musl binary the same way we profiled the gnu one."),
                Shell(
                    "perf record -g ./target/x86_64-unknown-linux-musl/release/logslice "
                    "/data/logs/access-2026-09.json --since 6h >/dev/null && perf report "
                    "--stdio --no-children | grep -v '^#' | head -4",
                    "    38.10%  logslice  [.] malloc\n    17.44%  logslice  [.] free\n"
                    "     9.87%  logslice  [.] logslice::slice\n"
                    "     6.02%  logslice  [.] memchr::arch::x86_64::avx2::memchr::One::find",
                    description="Profile the musl release binary",
                ),
            ),
            answer=(
                "Turns out it's the allocator: the profile of the musl binary shows 38% of the "
                "time in `malloc` and 17% in `free`, versus under 3% with glibc. The remaining "
                "per-line allocations (the `serde_json::Value` on the fallback path and the "
                "`String` for each output line) are cheap with glibc's malloc, but musl's "
                "mallocng is built for low memory use, not throughput. So this is the caveat from "
                "the release setup: the code is fine, the allocator is the difference."
            ),
            gold=("q11",),
            plants=("insight",),
        ),
        Turn(
            at="21:31",
            prompt="what's the fix, mimalloc?",
            steps=(
                Edit(
                    "Cargo.toml",
                    "[dev-dependencies]",
                    '[target.\'cfg(target_env = "musl")\'.dependencies]\nmimalloc = "0.1"\n\n'
                    "[dev-dependencies]",
                ),
                Edit(
                    "src/main.rs",
                    "use clap::Parser;",
                    'use clap::Parser;\n\n#[cfg(target_env = "musl")]\n#[global_allocator]\n'
                    "static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;",
                ),
                Shell(
                    "cargo build --release --target x86_64-unknown-linux-musl && hyperfine "
                    "'./target/x86_64-unknown-linux-musl/release/logslice "
                    "/data/logs/access-2026-09.json --since 6h'",
                    "  Time (mean ± σ):     991.3 ms ±  12.6 ms",
                    description="Build musl with mimalloc and benchmark",
                ),
            ),
            answer=(
                'Yes, but only for musl targets: `mimalloc = "0.1"` under '
                "`[target.'cfg(target_env = \"musl\")'.dependencies]` and a `#[global_allocator]"
                " static GLOBAL: mimalloc::MiMalloc` behind the same `cfg` in `main.rs`. The "
                "glibc builds stay on the system allocator, where mimalloc gained nothing "
                "measurable (0.95 s vs 0.94 s). On the Alpine box the musl binary now takes "
                "0.99 s instead of 1.9 s; mimalloc adds about 180 KB to the binary."
            ),
            gold=("q11",),
            plants=("decision",),
        ),
        Turn(
            at="21:50",
            prompt=(
                "speaking of size: the release binary is 4.8MB. I want it smaller without "
                "making it slower"
            ),
            steps=(
                Edit(
                    "Cargo.toml",
                    "[profile.release]\ndebug = 1",
                    '[profile.release]\nlto = "fat"\ncodegen-units = 1\nstrip = "symbols"',
                ),
                Shell(
                    "cargo build --release && ls -l target/release/logslice",
                    "    Finished `release` profile [optimized] target(s) in 1m 11s\n"
                    "-rwxr-xr-x 2 mara mara 2187416 Oct 20 21:56 target/release/logslice",
                    description="Build with the new release profile",
                ),
            ),
            answer=(
                'I set `lto = "fat"`, `codegen-units = 1` and `strip = "symbols"` in '
                "`[profile.release]`: the x86_64 gnu binary went from 4.8 MB to 2.1 MB and is "
                "slightly faster (0.93 s vs 0.95 s) because fat LTO inlines across serde_json "
                'and jiff. I did not use `opt-level = "z"` or `panic = "abort"`: `z` made '
                "the benchmark 22% slower, and abort would skip the destructor that restores "
                "the terminal state in `--follow`. A release build now takes 71 s instead of "
                "38 s, which only matters in CI."
            ),
            gold=("q12",),
            plants=("decision",),
        ),
        Turn(
            at="22:08",
            prompt=(
                "can we cross compile aarch64 locally without docker? cross needs docker and I "
                "don't want it on this laptop"
            ),
            steps=(
                Shell(
                    "cargo install cargo-zigbuild && pip install --user ziglang && cargo "
                    "zigbuild --release --target aarch64-unknown-linux-musl && file "
                    "target/aarch64-unknown-linux-musl/release/logslice",
                    "    Finished `release` profile [optimized] target(s) in 64.20s\n"
                    "target/aarch64-unknown-linux-musl/release/logslice: ELF 64-bit LSB "
                    "executable, ARM aarch64, version 1 (SYSV), statically linked, stripped",
                    description="Cross-compile for aarch64 with zig",
                ),
            ),
            answer=(
                "Use cargo-zigbuild: `cargo install cargo-zigbuild`, `pip install ziglang` (or "
                "a system zig), then `cargo zigbuild --release --target "
                "aarch64-unknown-linux-musl`. It uses zig as linker and C toolchain, so there "
                "is no Docker and no sysroot to install; the aarch64 build took 64 s and "
                "`file` reports a statically linked ARM aarch64 executable. For glibc targets "
                "you can pin the minimum glibc with a suffix like "
                "`aarch64-unknown-linux-gnu.2.31`, so the binary also runs on Debian 11."
            ),
            gold=("q13",),
            plants=("decision",),
        ),
        Turn(
            at="22:40",
            prompt=(
                "great. ran it on the pi: works. add a Makefile target so I remember the command"
            ),
            steps=(
                Write(
                    "Makefile",
                    ".PHONY: help release-aarch64 release-all\n\nhelp:\n\t@grep -E '^[a-z-]+:' "
                    "Makefile\n\nrelease-aarch64:\n\tcargo zigbuild --release --target "
                    "aarch64-unknown-linux-musl\n\tmkdir -p dist && cp target/aarch64-unknown-"
                    "linux-musl/release/logslice dist/logslice-aarch64-musl\n",
                ),
            ),
            answer=(
                "Added a `Makefile`: `make release-aarch64` runs `cargo zigbuild --release "
                "--target aarch64-unknown-linux-musl` and copies the binary to "
                "`dist/logslice-aarch64-musl`, `make release-all` builds the three local "
                "targets, and `make help` lists them. The CI release still goes through "
                "cargo-dist; this is only for quick local builds."
            ),
        ),
    ),
)

FOLLOW_AND_PUBLISH = Session(
    key="logslice-follow-publish",
    tool="codex",
    project=LOGSLICE,
    date="2026-11-02",
    names=(Name("2026-11-02 09:31", "follow mode + crates.io"),),
    summary="Polling vs inotify for --follow, the Broken pipe fix, publishing to crates.io.",
    turns=(
        Turn(
            at="09:30",
            prompt=(
                "follow mode polls every 250ms. should it use inotify via the notify crate instead?"
            ),
            answer=(
                "I'd keep polling. notify would react faster (a few ms instead of up to "
                "250 ms), but logslice is often pointed at logs on NFS and CIFS mounts, where "
                "inotify never fires for writes made by other hosts, so we'd need polling as a "
                "fallback anyway; notify's own `PollWatcher` exists for exactly that case. "
                "250 ms of latency is invisible to a human tailing logs, and one `stat` every "
                "250 ms costs nothing. We'll keep the poll loop and make the interval "
                "configurable with `--poll-interval`."
            ),
            gold=("q56",),
            plants=("decision",),
        ),
        Turn(
            at="09:44",
            prompt=(
                "ok add the flag. also --follow should exit cleanly on ctrl-c, and without the "
                "'Broken pipe' noise when I pipe it into head"
            ),
            steps=(
                Edit(
                    "src/main.rs",
                    "    if let Err(err) = run(cli) {",
                    "    if let Err(err) = run(cli) {\n        if is_broken_pipe(&err) {\n"
                    "            return ExitCode::SUCCESS;\n        }",
                ),
                Shell(
                    "cargo build --release && ./target/release/logslice big.json --since 1d | "
                    'head -3; echo "exit=$?"',
                    '{"ts":"2026-11-01T09:44:01Z","status":200,"path":"/"}\n'
                    '{"ts":"2026-11-01T09:44:01Z","status":200,"path":"/health"}\n'
                    '{"ts":"2026-11-01T09:44:02Z","status":304,"path":"/app.css"}\nexit=0',
                ),
            ),
            answer=(
                "Added `--poll-interval <DURATION>` (same span parser as `--since`, minimum "
                "10ms, default 250ms). The 'Broken pipe' message was a real bug: Rust ignores "
                "SIGPIPE, so `writeln!` to a closed pipe returns `ErrorKind::BrokenPipe` and "
                "anyhow printed it as an error. `main` now treats `BrokenPipe` as a normal exit "
                "with status 0, and Ctrl-C is handled with the `ctrlc` crate, which sets an "
                "`AtomicBool` that the poll loop checks. `logslice big.json --since 1d | head "
                "-3` now prints three lines and exits quietly."
            ),
            gold=("q55",),
            plants=("insight",),
        ),
        Turn(
            at="10:15",
            prompt=(
                "Switching gears: I want to publish to crates.io. anything to fix in "
                "Cargo.toml first?"
            ),
            steps=(
                Shell(
                    "cargo publish --dry-run",
                    "warning: manifest has no description, license, license-file, "
                    "documentation, homepage or repository.\n   Packaging logslice v0.3.0\n"
                    "    Packaged 61 files, 41.2MiB (40.9MiB compressed)",
                ),
            ),
            answer=(
                "Three things from `cargo publish --dry-run`: `license` was missing (I set "
                "`MIT OR Apache-2.0` to match the LICENSE files), `description` was missing, "
                "and the package included the 40 MB `benches/data/` sample, so I added "
                '`exclude = ["benches/data/", "docs/decisions/"]`. The packaged crate is '
                'now 48 KB. I also set `rust-version = "1.85"` because jiff 0.2 needs it, and '
                "the dry run passes."
            ),
            plants=("topic_switch",),
        ),
        Turn(
            at="10:31",
            prompt="publish it",
            steps=(
                Shell(
                    "cargo publish",
                    "   Uploading logslice v0.3.1 (/home/mara/src/logslice)\n"
                    "    Uploaded logslice v0.3.1 to registry `crates-io`\n"
                    "note: waiting for `logslice v0.3.1` to be available at registry "
                    "`crates-io`.\n   Published logslice v0.3.1 at registry `crates-io`",
                ),
            ),
            answer=(
                "Published `logslice v0.3.1` on crates.io, and `cargo install logslice` works "
                "from a clean container. I bumped the version from 0.3.0 because 0.3.0 was "
                "already tagged for the GitHub release without the new Cargo.toml metadata. "
                "Push the `v0.3.1` tag too, so the GitHub release and crates.io stay in step."
            ),
        ),
    ),
)

SESSIONS = (
    BOOTSTRAP,
    PERF,
    FLAKY_TZ_RELEASE,
    NO_MMAP,
    PRE_PUSH_REVIEW,
    MUSL,
    FOLLOW_AND_PUBLISH,
)
