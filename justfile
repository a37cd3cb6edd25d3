# kb-tools pipelines. `just --list` shows every recipe.
set shell := ["bash", "-euo", "pipefail", "-c"]
# Recipe arguments reach commands as "$@", quoted exactly as typed.
set positional-arguments

# The binaries come first on PATH for every recipe: KB_BIN_DIR when set
# (tests point it at their debug build), else the release build.
bin_dir := env_var_or_default("KB_BIN_DIR", justfile_directory() + "/target/release")
export PATH := bin_dir + ":" + env_var("PATH")

# Recipes act on KB_ROOT, else the nearest .library (see README).
root := env_var_or_default("KB_ROOT", "")
root_flag := if root == "" { "" } else { "--root " + root }

# List the recipes.
default:
    @just --list --unsorted

# Build the eight binaries (release).
build:
    @[ -n "${KB_BIN_DIR:-}" ] || cargo build --release --quiet --manifest-path {{justfile_directory()}}/Cargo.toml

# Create the .library layout here (or at KB_ROOT).
init: build
    kb-append init {{root_flag}}

# Write one document through the 8-step protocol: just write PATH --content "..."
write path *args: build
    kb-append write {{root_flag}} "$@"

# Write a batch of JSONL requests from stdin under one lock and one commit.
write-batch *args: build
    kb-append batch {{root_flag}} "$@"

# Copy the example library to a temp dir, make it a git repo, write through kb-append, show the result.
demo: build
    #!/usr/bin/env bash
    set -euo pipefail
    work=$(mktemp -d)
    cp -r {{justfile_directory()}}/examples/library "$work/.library"
    cd "$work"
    git init -q && git add -A
    git -c user.name=demo -c user.email=demo@localhost commit -qm "example library"
    export KB_ROOT="$work/.library"
    echo "== library at $KB_ROOT"
    printf -- '---\ntopic: connection-pooling\ntype: software\nkeywords: [postgres, pgbouncer, pool]\nrelated: [postgres-migrations]\n---\n# Connection pooling\n\nKeep transactions short; see [migrations](postgres-migrations-v1.md).\n' \
      | kb-append write .memory/.references/connection-pooling-v1.md --notebook nb-demo
    printf '%s\n' \
      '{"path":".memory/.experiences/software/pool-sizing-impl.md","content":"# Pool sizing\n\nStarted at 20 connections per pod.\n","notebook":"nb-demo"}' \
      '{"path":"team-notes/onboarding-checklist.md","content":"- [ ] Read the connection pooling reference\n","mode":"append","notebook":"nb-demo"}' \
      | kb-append batch
    kb-append event referenced .memory/.references/connection-pooling-v1.md --notebook nb-demo
    echo "== .memory/.references/.index.md"; cat .library/.memory/.references/.index.md
    echo "== last changelog lines"; tail -n 4 .library/.changelog
    echo "== relations of the new reference"; grep connection-pooling .library/.relations.jsonl
    echo "== git log"; git log --format='%h %s' | head -n 4
    echo "== just search 'connection pooling'"; kb-score connection pooling --format table

# Search the library with seed 000's scoring: just search "jwt auth" [--type software] [--tier 2] [--budget 2000] [--source NAME=DIR]
search query *args: build
    kb-score {{root_flag}} --format table "$@"

# List library contents per category (seed `list`): just list [--type 'software|data-pipeline'] [--topic T]
list *args: build
    kb-index list {{root_flag}} --format table "$@"

# Audit the library in six dimensions (seed `status`); exits 1 when one needs attention
status: build
    kb-index status {{root_flag}} --format table

# Maintain under one lock: quick (default) rebuild-index rebuild-relations compact check-staleness full|audit|all scheduled [--force]
maintain mode="quick" *flags: build
    kb-lock {{root_flag}} -- {{quote(just_executable())}} --justfile {{quote(justfile())}} --working-directory {{quote(invocation_directory())}} _maintain-{{mode}} "${@:2}"

_maintain-quick:
    kb-index quick {{root_flag}}

_maintain-rebuild-index:
    kb-index rebuild {{root_flag}}

_maintain-rebuild-relations:
    kb-relate rebuild {{root_flag}}

_maintain-compact:
    kb-append compact {{root_flag}}

_maintain-check-staleness:
    kb-index stale {{root_flag}}

_maintain-full:
    kb-lock sweep {{root_flag}}
    kb-index rebuild {{root_flag}} --no-commit
    kb-relate rebuild {{root_flag}}
    kb-append compact {{root_flag}} --no-commit
    kb-index stale {{root_flag}}
    kb-index commit {{root_flag}} full

_maintain-audit: _maintain-full

_maintain-all: _maintain-full

_maintain-scheduled *flags:
    kb-index scheduled {{root_flag}} "$@"

# Run `just maintain scheduled` daily at 03:00 from cron (idempotent; output to .library/.scheduled.log)
install-cron: build
    kb-index cron install {{root_flag}} --just {{quote(just_executable())}} --justfile {{quote(justfile())}}

# Remove this library's cron line, keeping every other crontab line
uninstall-cron: build
    kb-index cron uninstall {{root_flag}}

# Share the library with its git remote: commit pending writes, fetch, merge (logs united, derived files rebuilt, overlapping edits kept in .conflicts/), push. just sync [--remote NAME] [--branch B] [--no-push]
sync *args: build
    kb-append sync {{root_flag}} "$@"

# End a kept conflict: just resolve PATH --keep ours|theirs|FILE
resolve path *args: build
    kb-append resolve {{root_flag}} "$@"

# Scan skills or files for threats (table for people; exit 1 if dangerous)
scan +paths: build
    kb-guard scan {{root_flag}} --format table "$@"

# Scan for GitHub code scanning (SARIF 2.1.0 into kb-guard.sarif)
scan-sarif +paths: build
    kb-guard scan {{root_flag}} --format sarif "$@" > kb-guard.sarif

# The guarded write pipeline: requests on stdin are scanned, dangerous ones refused
guarded-write *args: build
    kb-guard filter {{root_flag}} | kb-append batch {{root_flag}} "$@"

# Neutralise injected instructions in external content before it is stored
sanitize file: build
    kb-guard sanitize "$@"

# Manage a skill (seed 002 skill_manage): just skill create|edit|patch|delete|write-file|remove-file|promote NAME [flags]
skill action name *args: build
    kb-append skill {{root_flag}} "$@"

# The skills with stage, trust tier and the guard's verdict (seed 002 skill_list)
skills *args: build
    kb-append skill list {{root_flag}} --format table "$@"

# Agent hook after each turn: count its tool calls; prints review_due when a skill review is due
skill-nudge calls="1" *args: build
    kb-append skill nudge {{root_flag}} --calls "$@"

# Security rules evolution (seed 000 evolve): status | propose INTEL | validate | review | integrate | full INTEL | scheduled [INTEL]
evolve step="status" *args: build
    {{quote(just_executable())}} --justfile {{quote(justfile())}} --working-directory {{quote(invocation_directory())}} _evolve-{{step}} "${@:2}"

_evolve-status:
    kb-guard rules status {{root_flag}} --format table

_evolve-propose intel:
    kb-guard rules propose {{root_flag}} "$1"

_evolve-validate *args:
    kb-guard rules validate {{root_flag}} "$@"

_evolve-review *args:
    kb-guard rules review {{root_flag}} "$@"

_evolve-integrate *args:
    kb-guard rules integrate {{root_flag}} "$@"

# propose -> validate -> review -> integrate, one pipeline; extra args go to validate (--corpus DIR)
_evolve-full intel *args:
    kb-guard rules propose {{root_flag}} "$1" | kb-guard rules validate {{root_flag}} - "${@:2}" | kb-guard rules review {{root_flag}} - | kb-guard rules integrate {{root_flag}} -

# The same, only for the layers due (core 7 d, extended 1 d); cron-friendly
_evolve-scheduled intel="-" *args:
    kb-guard rules propose {{root_flag}} --scheduled "$1" | kb-guard rules validate {{root_flag}} - "${@:2}" | kb-guard rules review {{root_flag}} - | kb-guard rules integrate {{root_flag}} -

# Remember what the user said (seed 003): silent decisions are written, gated ones come back with their question.
remember *args: build
    kb-memgate decide "$@" | kb-memgate apply "$@"

# Apply answered decisions (each gated decision with "answer" set).
remember-answer *args: build
    kb-memgate apply "$@"

# Regenerate the memory INDEX.md and search index from the notes.
remember-reindex *args: build
    kb-memgate reindex "$@"

# Apply pending last-word deltas to AGENTS.md, SOUL.md, USER.md: just lastword [apply] [--dry-run] [--file USER.md]
lastword action="apply" *args: build
    kb-lastword "$@"

# What last-word has pending and staged.
lastword-status: build
    kb-lastword status --format table

# Pre-session-stop hook: queue the session's buffered deltas, then apply them.
lastword-hook buffer=".agents/last-word.session.jsonl" source="": build
    if [ -s "{{buffer}}" ]; then kb-lastword plan --source "${2:-session-$$}" "{{buffer}}" >/dev/null && rm -f "{{buffer}}"; fi
    kb-lastword apply >/dev/null

# Run every test (unit and integration).
test:
    cargo nextest run --workspace --no-fail-fast

# Benchmarks (release build): each prints its figures against its baseline.
bench: build
    bench/append.sh 10000 1000
    bash bench/memgate.sh
    python3 bench/memgate_locomo.py target/release/kb-memgate
    bash bench/lastword.sh
    bash bench/index.sh 100000
    bash bench/score.sh
    bash bench/guard.sh 3000
    bash bench/evolve.sh
    bash bench/sync.sh 10000 100 1000
    bash bench/mcp.sh 2000 300

# What CI checks: formatting, lints as errors, the tests.
ci:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
    just test
