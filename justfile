# kb-tools pipelines. `just --list` shows every recipe.
#
# Every library recipe acts on the directory it was invoked from ([no-cd]),
# so this file works the same run directly (`just -f ~/kb-tools/justfile
# init`), imported (`import '~/kb-tools/justfile'`) or as a module
# (`mod kb '~/kb-tools/justfile'`, then `just kb init`) from a project of
# your own; `kb-append --justfile` prints where it is. The binaries come
# from PATH (`just install` puts them there); nothing is built at run time.
set shell := ["bash", "-euo", "pipefail", "-c"]
# Recipe arguments reach commands as "$@", quoted exactly as typed.
set positional-arguments
# Recipes print what their commands print, not the command lines as well
# (stderr is for errors; records go to stdout).
set quiet

# KB_BIN_DIR, when set, comes first on PATH: the tests point it at their
# debug build, a developer at `target/debug` to skip installing.
export PATH := if env("KB_BIN_DIR", "") == "" { env("PATH") } else { env("KB_BIN_DIR") + ":" + env("PATH") }

# Recipes act on KB_ROOT, else the nearest .library (see README).
root := env("KB_ROOT", "")
root_flag := if root == "" { "" } else { "--root " + quote(root) }

# What `just setup` installs for the tests, pinned, under the build's target
# folder (CARGO_TARGET_DIR, else target/), removed with the build.
tools := join(source_directory(), env("CARGO_TARGET_DIR", "target"), "tools")
nextest_version := "0.9.143"
mcp_sdk_version := "2.3.0"
mcp_ts_sdk_version := "1.32.2"

# This file, for recipes that run other recipes of it (works when imported too).
self := quote(just_executable()) + " --justfile " + quote(source_file()) + " --working-directory " + quote(invocation_directory())

# List the recipes.
[no-cd]
default:
    @{{self}} --list --unsorted

# Install the nine kb-* binaries on PATH (~/.cargo/bin) from this checkout: the `dist` profile (stripped, no debug info).
[no-cd]
install:
    #!/usr/bin/env bash
    set -euo pipefail
    cargo install --locked --profile dist --path {{quote(source_directory())}}
    bin="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin"
    echo "installed kb-append kb-guard kb-index kb-lastword kb-lock kb-mcp kb-memgate kb-relate kb-score in $bin"
    case ":$PATH:" in
      *":$bin:"*) ;;
      *) echo "note: $bin is not on PATH; add it (export PATH=\"$bin:\$PATH\") so the recipes find the binaries" ;;
    esac

# Create the .library layout here (or at KB_ROOT).
[no-cd]
init:
    kb-append init {{root_flag}}

# Write one document through the 8-step protocol: just write PATH --content "..."
[no-cd]
write path *args:
    kb-append write {{root_flag}} "$@"

# Write a batch of JSONL requests from stdin under one lock and one commit.
[no-cd]
write-batch *args:
    kb-append batch {{root_flag}} "$@"

# Copy the example library into DIR (default kb-demo, here), make it a git repo, write through kb-append, show the result; the library stays for you to explore.
[no-cd]
demo dir="kb-demo":
    #!/usr/bin/env bash
    set -euo pipefail
    dir="$1"
    # Only a folder an earlier demo made (it holds .kb-demo) is replaced.
    if [ -e "$dir" ] && [ ! -e "$dir/.kb-demo" ]; then
      echo "just demo: $dir exists and is not an earlier demo; name another folder: just demo DIR" >&2
      exit 2
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    cd "$dir"
    work=$(pwd)
    : > .kb-demo
    cp -r {{quote(source_directory() / "examples/library")}} .library
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
    echo "== just search 'connection pooling'"; kb-score connection pooling --format table || [ $? -eq 1 ]
    echo "== explore it: the library stays in $work"
    echo "  cd $(printf %q "$work")"
    echo "  just -f $(printf %q {{quote(source_file())}}) search 'pool sizing'    # or list, status, write PATH --content ..."
    echo "  git log --stat                                   # one commit per write"
    echo "  rm -rf $(printf %q "$work")                      # when done"

# Search the library (no hits is an answer: exits 0): just search "jwt auth" [--type software] [--tier 2] [--budget 2000] [--source NAME=DIR]
[no-cd]
search query *args:
    kb-score {{root_flag}} --format table "$@" || [ $? -eq 1 ]

# List library contents per category: just list [--type 'software|data-pipeline'] [--topic T]
[no-cd]
list *args:
    kb-index list {{root_flag}} --format table "$@"

# Audit the library in six dimensions and show what needs attention (exits 0; `just check` fails on it)
[no-cd]
status:
    kb-index status {{root_flag}} --format table || [ $? -eq 1 ]

# For CI and hooks: the status audit, exiting 1 when a dimension needs attention
[no-cd]
check:
    kb-index status {{root_flag}} --format table

# Maintain under one lock (JSON Lines out, one record per step): quick (default) rebuild-index rebuild-relations compact check-staleness full|audit|all scheduled [--force]
[no-cd]
maintain mode="quick" *flags:
    kb-lock {{root_flag}} -- {{self}} _maintain-{{mode}} "${@:2}"

[no-cd]
_maintain-quick:
    kb-index quick {{root_flag}}

[no-cd]
_maintain-rebuild-index:
    kb-index rebuild {{root_flag}}

[no-cd]
_maintain-rebuild-relations:
    kb-relate rebuild {{root_flag}}

[no-cd]
_maintain-compact:
    kb-append compact {{root_flag}}

[no-cd]
_maintain-check-staleness:
    kb-index stale {{root_flag}} --format jsonl

[no-cd]
_maintain-full:
    kb-lock sweep {{root_flag}}
    kb-index rebuild {{root_flag}} --no-commit
    kb-relate rebuild {{root_flag}}
    kb-append compact {{root_flag}} --no-commit
    kb-index stale {{root_flag}} --format jsonl
    kb-index commit {{root_flag}} full

[no-cd]
_maintain-audit: _maintain-full

[no-cd]
_maintain-all: _maintain-full

[no-cd]
_maintain-scheduled *flags:
    kb-index scheduled {{root_flag}} "$@"

# Run `just maintain scheduled` daily at 03:00 from cron: absolute paths, KB_ROOT and PATH in the line (output to .library/.scheduled.log)
[no-cd]
install-cron:
    kb-index cron install {{root_flag}} --just {{quote(just_executable())}} --justfile {{quote(source_file())}}

# Remove this library's cron line, keeping every other crontab line
[no-cd]
uninstall-cron:
    kb-index cron uninstall {{root_flag}}

# Share the library with its git remote: commit pending writes, fetch, merge (logs united, derived files rebuilt, overlapping edits kept in .conflicts/), push. just sync [--remote NAME] [--branch B] [--no-push]
[no-cd]
sync *args:
    kb-append sync {{root_flag}} "$@"

# End a kept conflict: just resolve PATH --keep ours|theirs|FILE
[no-cd]
resolve path *args:
    kb-append resolve {{root_flag}} "$@"

# Scan skills or files for threats and show the findings (exits 0; add --fail-on caution|dangerous to gate on them)
[no-cd]
scan +paths:
    kb-guard scan {{root_flag}} --format table --fail-on never "$@"

# Scan for GitHub code scanning (SARIF 2.1.0 into kb-guard.sarif)
[no-cd]
scan-sarif +paths:
    kb-guard scan {{root_flag}} --format sarif "$@" > kb-guard.sarif

# The guarded write pipeline: requests on stdin are scanned, dangerous ones refused (their error records pass through; exit 2)
[no-cd]
guarded-write *args:
    kb-guard filter {{root_flag}} | kb-append batch {{root_flag}} "$@"

# Neutralise injected instructions in external content before it is stored
[no-cd]
sanitize file:
    kb-guard sanitize "$@"

# Manage a skill (skill_manage): just skill create|edit|patch|delete|write-file|remove-file|promote NAME [flags]
[no-cd]
skill action name *args:
    kb-append skill {{root_flag}} "$@"

# The skills with stage, trust tier and the guard's verdict (skill_list)
[no-cd]
skills *args:
    kb-append skill list {{root_flag}} --format table "$@"

# Agent hook after each turn: count its tool calls; prints review_due when a skill review is due
[no-cd]
skill-nudge calls="1" *args:
    kb-append skill nudge {{root_flag}} --calls "$@"

# Evolve the guard's security rules: status | propose INTEL | validate | review | integrate | full INTEL | scheduled [INTEL]
[no-cd]
evolve step="status" *args:
    {{self}} _evolve-{{step}} "${@:2}"

[no-cd]
_evolve-status:
    kb-guard rules status {{root_flag}} --format table

[no-cd]
_evolve-propose intel:
    kb-guard rules propose {{root_flag}} "$1"

[no-cd]
_evolve-validate *args:
    kb-guard rules validate {{root_flag}} "$@"

[no-cd]
_evolve-review *args:
    kb-guard rules review {{root_flag}} "$@"

[no-cd]
_evolve-integrate *args:
    kb-guard rules integrate {{root_flag}} "$@"

# propose -> validate -> review -> integrate, one pipeline; extra args go to validate (--corpus DIR)
[no-cd]
_evolve-full intel *args:
    kb-guard rules propose {{root_flag}} "$1" | kb-guard rules validate {{root_flag}} - "${@:2}" | kb-guard rules review {{root_flag}} - | kb-guard rules integrate {{root_flag}} -

# The same, only for the layers due (core 7 d, extended 1 d); cron-friendly
[no-cd]
_evolve-scheduled intel="-" *args:
    kb-guard rules propose {{root_flag}} --scheduled "$1" | kb-guard rules validate {{root_flag}} - "${@:2}" | kb-guard rules review {{root_flag}} - | kb-guard rules integrate {{root_flag}} -

# Remember what the user said (governed memory): silent decisions are written, gated ones come back with their question.
[no-cd]
remember *args:
    kb-memgate decide "$@" | kb-memgate apply "$@"

# Apply answered decisions (each gated decision with "answer" set).
[no-cd]
remember-answer *args:
    kb-memgate apply "$@"

# Regenerate the memory INDEX.md and search index from the notes.
[no-cd]
remember-reindex *args:
    kb-memgate reindex "$@"

# Apply pending last-word deltas to AGENTS.md, SOUL.md, USER.md: just lastword [apply] [--dry-run] [--file USER.md]
[no-cd]
lastword action="apply" *args:
    kb-lastword "$@"

# What last-word has pending and staged.
[no-cd]
lastword-status:
    kb-lastword status --format table

# Session-end hook (Claude Code SessionEnd/PreCompact, Codex, Cursor): queue the session's buffered deltas, then apply them.
[no-cd]
lastword-hook buffer=".agents/last-word.session.jsonl" source="":
    if [ -s {{quote(buffer)}} ]; then kb-lastword plan --source "${2:-session-$$}" {{quote(buffer)}} >/dev/null && rm -f {{quote(buffer)}}; fi
    kb-lastword apply >/dev/null

# Bash completions for the nine binaries, from their flag tables: just completions > ~/.local/share/bash-completion/completions/kb-tools
[no-cd]
completions:
    kb-append completions bash

# Man pages of the nine binaries, from their flag tables, into DIR/man1: just man ~/.local/share/man
[no-cd]
man dir:
    mkdir -p {{quote(dir / "man1")}}
    for b in kb-append kb-guard kb-index kb-lastword kb-lock kb-memgate kb-relate kb-score; do kb-append man "$b" > {{quote(dir / "man1")}}/"$b".1; done

# Run every test (unit and integration) of this checkout: with cargo-nextest when `just setup --nextest` installed it (or it is on PATH), else cargo test.
[no-cd]
test:
    #!/usr/bin/env bash
    set -euo pipefail
    cd {{quote(source_directory())}}
    if [ -x {{quote(tools / "bin/cargo-nextest")}} ]; then
      PATH={{quote(tools / "bin")}}:$PATH cargo nextest run --workspace --no-fail-fast
    elif cargo nextest --version >/dev/null 2>&1; then
      cargo nextest run --workspace --no-fail-fast
    else
      echo "just test: running cargo test (just setup --nextest installs cargo-nextest)" >&2
      cargo test --workspace --lib --bins --tests --no-fail-fast
    fi

# Benchmarks (release build): each prints its figures against its baseline.
[no-cd]
bench:
    #!/usr/bin/env bash
    set -euo pipefail
    cd {{quote(source_directory())}}
    cargo build --release --quiet
    bench/append.sh 10000 1000
    bash bench/memgate.sh
    # With KB_MEMGATE_MODEL set (a sentence encoder's folder), a row with it too.
    python3 bench/memgate_locomo.py ${KB_MEMGATE_MODEL:+--model "$KB_MEMGATE_MODEL"} target/release/kb-memgate
    bash bench/lastword.sh
    bash bench/lastword-plan.sh
    bash bench/index.sh 100000
    bash bench/score.sh
    bash bench/guard.sh 3000
    bash bench/evolve.sh
    bash bench/sync.sh 10000 100 1000
    bash bench/mcp.sh 2000 300
    bash bench/costs.sh
    python3 bench/score_costs.py target/release/kb-score

# Install what the tests need, pinned, into target/tools (nothing global): the MCP Python SDK in a venv, the TypeScript SDK with npm; --nextest: cargo-nextest too; --check: only say
[no-cd]
setup *flags:
    #!/usr/bin/env bash
    # Bash builtins and the declared tools only (tests/setup.rs runs it with no other tool on PATH).
    set -euo pipefail
    cd {{quote(source_directory())}}
    tools={{quote(tools)}}
    check="" nextest=""
    for flag in "$@"; do
      case $flag in
        --check) check=1 ;;
        --nextest) nextest=1 ;;
        *) echo "just setup: unknown flag '$flag' (the flags are --check and --nextest)" >&2; exit 2 ;;
      esac
    done
    # What is missing is found, and the system's part checked, before anything is installed.
    todo=()
    # cargo-nextest is optional: building it takes 12 CPU minutes, and `just test` runs cargo test without it.
    version=$("$tools/bin/cargo-nextest" --version 2>/dev/null || true)
    if [[ $version == "cargo-nextest {{nextest_version}} "* ]]; then
      echo "ok cargo-nextest {{nextest_version}} ($tools/bin)"
    elif [ -n "$nextest" ]; then
      todo+=(nextest)
    else
      echo "ok without cargo-nextest: just test runs cargo test (just setup --nextest installs {{nextest_version}})"
    fi
    py="$tools/py/bin/python3"
    version=$("$py" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null || true)
    if [ "$version" = {{mcp_sdk_version}} ]; then
      echo "ok MCP Python SDK {{mcp_sdk_version}} ($tools/py)"
    else
      if ! command -v python3 >/dev/null; then
        echo "just setup: python3 is missing: install Python 3.10 or later with its venv module (Debian, Ubuntu: apt-get install python3 python3-venv)" >&2
        exit 1
      fi
      if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
        echo "just setup: the MCP Python SDK needs Python 3.10 or later; python3 is $(python3 --version 2>&1)" >&2
        exit 1
      fi
      if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
        echo "just setup: python3 cannot make a virtual environment (no ensurepip module): install the python3-venv package (Debian, Ubuntu: apt-get install python3-venv), then run just setup again" >&2
        exit 1
      fi
      todo+=(venv)
    fi
    # The MCP TypeScript SDK, the second official client, in an npm prefix (node and npm when present).
    version=$(node -p "require('$tools/npm/node_modules/@modelcontextprotocol/sdk/package.json').version" 2>/dev/null || true)
    if [ "$version" = {{mcp_ts_sdk_version}} ]; then
      echo "ok MCP TypeScript SDK {{mcp_ts_sdk_version}} ($tools/npm)"
    elif command -v npm >/dev/null && command -v node >/dev/null; then
      todo+=(npm)
    else
      echo "ok without node and npm: the TypeScript SDK test fails until they are installed (Debian, Ubuntu: apt-get install nodejs npm)"
    fi
    # run WHAT COMMAND...: runs COMMAND (with --check: says it would).
    run() {
      local what=$1; shift
      if [ -n "$check" ]; then echo "would install $what: $*"; else echo "installing $what: $*" >&2; "$@"; fi
    }
    for t in ${todo[@]+"${todo[@]}"}; do
      case $t in
        # Built without its self-update: fewer crates to compile.
        nextest) run "cargo-nextest {{nextest_version}}" cargo install --locked cargo-nextest --version {{nextest_version}} \
                   --no-default-features --features default-no-update --root "$tools" ;;
        venv) run "a venv" python3 -m venv --clear "$tools/py"
              run "MCP Python SDK {{mcp_sdk_version}}" "$py" -m pip install --disable-pip-version-check --progress-bar off \
                mcp=={{mcp_sdk_version}} ;;
        npm) run "MCP TypeScript SDK {{mcp_ts_sdk_version}}" npm install --prefix "$tools/npm" --no-audit --no-fund \
               @modelcontextprotocol/sdk@{{mcp_ts_sdk_version}} ;;
      esac
    done

# What CI checks on this checkout: formatting, lints as errors, the tests (after `just setup`).
[no-cd]
ci:
    cd {{quote(source_directory())}} && cargo fmt --all -- --check
    cd {{quote(source_directory())}} && cargo clippy --workspace --all-targets -- -D warnings
    {{self}} setup
    {{self}} test
