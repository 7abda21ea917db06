"""The ``metacog`` command: build the book, ask models, check data."""

from __future__ import annotations

import argparse
import sys


def _book(args) -> int:
    from metacog.book import BookError, build

    try:
        index = build(only=args.only or None, html=not args.no_html, reuse=not args.force)
    except BookError as exc:
        print(f"metacog book: {exc}", file=sys.stderr)
        return 1
    print(f"Executed chapters are in {index}" if args.no_html else f"The book is at {index}")
    return 0


def _check(args) -> int:
    from metacog.book import BookError, load_manifest

    try:
        chapters = load_manifest()
    except BookError as exc:
        print(f"metacog check: {exc}", file=sys.stderr)
        return 1
    for ch in chapters:
        print(f"{ch.page}: {ch.source} [{ch.parameter_set}] {ch.parameters}")
    return 0


def _data(args) -> int:
    from metacog import data

    if args.verify:
        from metacog.data.fetch import verify

        for name in args.verify:
            print(f"{name}: ok, {verify(name)}")
        return 0
    print(data.sources().to_string(index=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="metacog", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("book", help="execute every chapter with papermill and render the book")
    p.add_argument("--only", nargs="*", help="execute only these pages (others are reused)")
    p.add_argument("--force", action="store_true", help="re-execute chapters even if unchanged")
    p.add_argument("--no-html", action="store_true", help="execute, but do not render")
    p.set_defaults(func=_book)

    p = sub.add_parser("check", help="check the manifest and every parameter set, run nothing")
    p.set_defaults(func=_check)

    p = sub.add_parser("data", help="list the external datasets, or verify their sha256")
    p.add_argument("--verify", nargs="*", metavar="NAME", help="check these datasets' sha256")
    p.set_defaults(func=_data)

    p = sub.add_parser("collect", help="record the runs of data/responses/runs.yml (local panel)",
                       add_help=False)
    p.set_defaults(func=None)

    try:
        from metacog.elicit import cli as elicit_cli
    except ImportError:
        elicit_cli = None
    if elicit_cli is not None:
        p = sub.add_parser("elicit", help="ask models for answers and confidence (cached, resumable)")
        elicit_cli.add_arguments(p)
        p.set_defaults(func=elicit_cli.main)

    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "collect":
        from metacog.collect import main as collect_main

        return collect_main(argv[1:])
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
