"""A memory note in kb-memgate's template (seed 003), for the benchmark
generators (memgate_gen.py, memgate_locomo.py): one place that knows the
format, so the benchmarks stay in step with lib/src/memgate/note.rs."""


def note(nid, one, kind="fact", session="bench", when=()):
    """The note text of id `nid` whose one-liner (and decision) is `one`."""
    one = " ".join(one.split())
    title = one.rstrip(".。")[:60]
    loads = "".join(f"- {w}\n" for w in when)
    return f"""# {nid}: {title}

## Meta

- Id: {nid}
- Kind: {kind}
- Status: active
- Strength: should
- Scope: project
- Audience: agent
- Portability: project-specific
- Source: user
- Tags:
- Supersedes:
- CreatedAt: 2026-01-01T00:00:00Z
- UpdatedAt: 2026-01-01T00:00:00Z
- Session: {session}

## When to load

{loads}
## One-liner (for injection)

{one}

## Context / Decision

- Decision: {one}
"""
