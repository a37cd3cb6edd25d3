#!/usr/bin/env python3
"""The plan bench/write-floor.c writes: each file's final bytes in a batch.

Usage: write-floor.py REQUESTS.jsonl PLAN
Reads bench/gen-writes.py's requests and works out each path's final bytes
(overwrite or append, as kb-append batch does), then writes them to PLAN
as "<path>\\n<length>\\n<bytes>" after one another, in first-write order.
Prints the number of files.
"""
import json
import sys


def main():
    requests, plan = sys.argv[1], sys.argv[2]
    final = {}
    with open(requests) as f:
        for line in f:
            r = json.loads(line)
            old = final.get(r["path"])
            if r.get("mode") == "append" and old is not None:
                final[r["path"]] = old + ("" if old.endswith("\n") else "\n") + r["content"]
            else:
                final[r["path"]] = r["content"]
    with open(plan, "wb") as out:
        for path, text in final.items():
            b = text.encode()
            out.write(f"{path}\n{len(b)}\n".encode())
            out.write(b)
    print(len(final))


if __name__ == "__main__":
    main()
