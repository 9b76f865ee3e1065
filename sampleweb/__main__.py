"""`python -m sampleweb serve|write`: run the sample web in the foreground, or write it to disk."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from . import build_web, serve, write_to_lake


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m sampleweb")
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve", help="serve until SIGINT/SIGTERM")
    p_serve.add_argument("--port", type=int, default=0, help="shared port (0: pick a free one)")
    p_serve.add_argument("--first-octet", type=int, default=10, help="site i binds 127.0.0.(N+i)")
    p_serve.add_argument("--seed", type=int, default=0)
    p_serve.add_argument("--seeds-out", type=Path, help="write the seed URLs here, one per line")
    p_serve.add_argument("--labels-out", type=Path, help="write labels.parquet with real URLs here")
    p_write = sub.add_parser(
        "write", help="write pages, labels.parquet and sites.json to a directory"
    )
    p_write.add_argument("--out", type=Path, required=True)
    p_write.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    web = build_web(args.seed)
    if args.command == "write":
        print(json.dumps(write_to_lake(web, args.out), indent=2))
        return 0
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with serve(web, first_octet=args.first_octet, port=args.port) as sw:
        seeds = sw.seeds()
        if args.labels_out:
            import pyarrow.parquet as pq

            pq.write_table(sw.labels_table(), args.labels_out)
        if args.seeds_out:
            tmp = args.seeds_out.with_name(args.seeds_out.name + ".tmp")
            tmp.write_text("\n".join(seeds) + "\n")
            tmp.replace(args.seeds_out)  # atomic, so a waiting process never reads half a file
        print("\n".join(seeds), flush=True)
        print(
            f"serving {len(web.sites)} sites on port {sw.port}; Ctrl-C to stop",
            file=sys.stderr,
            flush=True,
        )
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
