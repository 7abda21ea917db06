"""The ``metacog`` command: build the book, ask models, check data.

Exit codes, the same for every subcommand (book, check, data, chapter, example-data, place,
elicit, replicate, collect, probe):

- 0: done;
- 1: the work itself failed (a chapter raised while executing, a build step broke);
- 2: a usage or environment error (bad option or file, no checkout, no server, nothing usable
  came back), reported as one line on stderr, without a traceback, before anything is lost;
- 130: interrupted (Ctrl-C), one line.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def _book(args) -> int:
    from metacog.book import BookError, ManifestError, ParameterError, build

    if args.source or args.out:
        return _source_book(args)
    try:
        index = build(only=args.only or None, html=not args.no_html, reuse=not args.force, jobs=args.jobs)
    except (ManifestError, ParameterError) as exc:  # bad input: nothing was executed
        print(f"metacog book: {exc}", file=sys.stderr)
        return 2
    except BookError as exc:
        print(f"metacog book: {exc}", file=sys.stderr)
        return 1
    print(f"Executed chapters are in {index}" if args.no_html else f"The book is at {index}")
    return 0


def _source_book(args) -> int:
    """``metacog book --source FILE --out DIR``: the book on response files (:mod:`metacog.sourcebook`)."""
    from metacog.book import BookError
    from metacog.chapter import ChapterInputError

    def say(msg):
        print(f"[book] {msg}", file=sys.stderr, flush=True)

    try:
        if not args.source:
            raise ChapterInputError("--out is for a book on your own files: give --source FILE too.")
        if not args.out:
            raise ChapterInputError("--source needs --out DIR, the folder for the executed pages and html/.")
        if args.only or args.force:
            raise ChapterInputError("--only and --force are for the default book; with --source every "
                                    "page the file serves is built (delete DIR to start again).")
        _check_out_folder(args.out, "--out")
        from metacog.sourcebook import build

        made = build(args.source, args.out, jobs=args.jobs, html=not args.no_html, log=say)
    except ChapterInputError as exc:
        print(f"metacog book: {exc}", file=sys.stderr)
        return 2
    except BookError as exc:
        print(f"metacog book: {exc}", file=sys.stderr)
        return 1
    print(made.summary().to_string(index=False), file=sys.stderr)
    print(os.fspath(made.index) if made.index else Path(args.out).resolve() / "src" / "notebooks")
    return 0


def _check(args) -> int:
    from metacog.book import BookError, load_manifest

    try:
        chapters = load_manifest()
    except BookError as exc:  # a manifest or parameter set that does not fit: bad input
        print(f"metacog check: {exc}", file=sys.stderr)
        return 2
    for ch in chapters:
        print(f"{ch.page}: {ch.source} [{ch.parameter_set}] {ch.parameters}")
    return 0


def _data(args) -> int:
    from metacog import data
    if args.verify:
        from metacog.data.fetch import verify

        for name in args.verify:
            try:
                print(f"{name}: ok, {verify(name)}")
            except ValueError as exc:  # unknown name, or a copy whose sha256 differs
                print(f"metacog data: {exc}", file=sys.stderr)
                return 2
            except OSError as exc:
                print(f"metacog data: {name}: {exc}", file=sys.stderr)
                return 2
        return 0
    print(data.sources().to_string(index=False))
    return 0


def _chapter(args) -> int:
    from metacog.book import BookError, ManifestError
    from metacog.chapter import ChapterInputError, parse_cut, parse_value, run

    def say(msg):
        print(f"[chapter] {msg}", file=sys.stderr, flush=True)

    try:
        parameters = {}
        for key, value in args.param or []:
            parameters[key] = parse_value(value)
        cuts = dict(parse_cut(c) for c in args.cut or [])
        extra = {"manifest": Path(args.manifest).resolve()} if args.manifest else {}
        _check_out_folder(args.out, "--out")
        page = run(args.name, args.source, args.out, parameters=parameters, cuts=cuts,
                   html=not args.no_html, log=say, **extra)
    except (ChapterInputError, ManifestError) as exc:  # bad input, or no checkout: exit 2
        print(f"metacog chapter: {exc}", file=sys.stderr)
        return 2
    except BookError as exc:
        print(f"metacog chapter: {exc}", file=sys.stderr)
        return 1
    print(os.fspath(page))
    return 0


def _check_out_folder(folder, flag: str) -> None:
    """:func:`metacog.paths.writable_folder`, as a ChapterInputError (bad input: exit 2)."""
    from metacog.chapter import ChapterInputError
    from metacog.paths import writable_folder

    try:
        writable_folder(folder, f"{flag} {folder}")
    except ValueError as exc:
        raise ChapterInputError(str(exc)) from None


def _example_data(args) -> int:
    from metacog.chapter import ChapterInputError
    from metacog.power.examples import example_responses, write_responses

    try:
        _check_out_folder(Path(args.out).parent, "--out")
        df = example_responses(n_models=args.models, n_items=args.items, kappa=args.kappa,
                               seed=args.seed)
        path = write_responses(df, args.out)
    except (ValueError, ChapterInputError) as exc:
        print(f"metacog example-data: {exc}", file=sys.stderr)
        return 2
    print(f"{path}: {len(df)} rows, {df['model'].nunique()} models, {df['item_id'].nunique()} items",
          file=sys.stderr)
    print(path)
    return 0


def _place(args) -> int:
    """``metacog place``: ask one model the panel's items, place it, write the page (one line, exit 2,
    for bad input, checked before any call)."""
    from metacog.pages.place import run as placing

    try:
        placing.check(args.panel, args.model, args.api_base, args.n_items, args.probe, args.responses,
                        args.max_tokens, args.concurrency, args.timeout, args.max_retries)
        _check_out_folder(args.out, "--out")
        if args.responses:
            args.model = placing.model_of(args.responses)
    except Exception as exc:  # noqa: BLE001 - ValueError or ChapterInputError: bad input
        print(f"metacog place: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out).resolve()
    if args.responses:
        responses = str(Path(args.responses).expanduser().resolve())
    else:
        responses = str(placing.collect(args.model, out, api_base=args.api_base, n_items=args.n_items,
                                          seed=args.seed, cache=args.cache, max_tokens=args.max_tokens,
                                          concurrency=args.concurrency, progress=not args.no_progress,
                                          timeout=args.timeout, retries=args.max_retries))
    try:
        placing.refuse_unusable(responses, args.model, args.api_base, timeout=args.timeout)
    except ValueError as exc:  # nothing usable came back: a page on nothing would only mislead
        print(f"metacog place: {exc}", file=sys.stderr)
        return 2
    from metacog.replicate.panel import place_page

    page = place_page(args.model, responses, out, panel=args.panel, n_items=args.n_items, seed=args.seed,
                      probe=args.probe, max_tokens=args.max_tokens, html=not args.no_html)
    print(os.fspath(page))
    return 0


def _replicate(args) -> int:
    """``metacog replicate``: plan (and with ``--plan`` only print) a run of both papers' designs on
    the given models, refuse it above ``--budget``, ask, and build the book on the answers."""
    from metacog.book import BookError
    from metacog.replicate import ReplicateError, plan, run

    def say(msg):
        print(f"[replicate] {msg}", file=sys.stderr, flush=True)

    common = dict(benchmarks=args.benchmarks, n_items=args.n_items, audit=not args.no_audit,
                  api_base=args.api_base, batch=args.batch, max_tokens=args.max_tokens, seed=args.seed,
                  panel=args.panel, panel_items=args.panel_items)
    try:
        if args.plan:
            from metacog.replicate import check_budget

            p = plan(args.models, **common)
            print(p.text())
            check_budget(p, args.budget)
            return 0
        from metacog.replicate import check

        check(args.models, args.benchmarks, args.n_items, args.panel, args.panel_items, args.api_base)
        if not args.out:
            raise ReplicateError("--out: give the folder for responses.parquet and the book (or use --plan).")
        _check_out_folder(args.out, "--out")
        result = run(args.models, args.out, budget=args.budget, router=args.router, cache=args.cache,
                     concurrency=args.concurrency, timeout=args.timeout, max_retries=args.max_retries,
                     progress=not args.no_progress,
                     book=not args.no_book, jobs=args.jobs, log=say, **common)
    except (ReplicateError, ValueError) as exc:  # bad input, over budget, nothing came back: exit 2
        print(f"metacog replicate: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
              file=sys.stderr)
        return 2
    except FileNotFoundError as exc:  # a benchmark's data not found: the message says where it looked
        print(f"metacog replicate: {exc}", file=sys.stderr)
        return 2
    except BookError as exc:
        print(f"metacog replicate: {exc}", file=sys.stderr)
        return 1
    print(os.fspath(result.responses))
    if result.book is not None:
        print(os.fspath(result.book.index))
    if result.placed is not None:
        for page in result.placed["page"]:
            print(os.fspath(page))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="metacog", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("book", help="execute every chapter with papermill and render the book")
    p.add_argument("--only", nargs="*", help="execute only these pages (others are reused)")
    p.add_argument("--force", action="store_true", help="re-execute chapters even if unchanged")
    p.add_argument("--no-html", action="store_true", help="execute, but do not render")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="chapters executed at once (default: $METACOG_BOOK_JOBS, else the CPU count, at most 4)")
    p.add_argument("--source", action="append", metavar="FILE",
                   help="build the book on your own response file (CSV/Parquet/JSONL) instead; repeat "
                        "for several; needs --out")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="with --source: folder for the executed pages and the book's html/")
    p.set_defaults(func=_book)

    p = sub.add_parser("check", help="check the manifest and every parameter set, run nothing")
    p.set_defaults(func=_check)

    p = sub.add_parser("data", help="list the external datasets, or verify their sha256")
    p.add_argument("--verify", nargs="*", metavar="NAME", help="check these datasets' sha256")
    p.set_defaults(func=_data)

    p = sub.add_parser("chapter", help="run one chapter on your own responses and render it as one page")
    p.add_argument("name", help="a page of notebooks/manifest.yml, e.g. rank_one")
    p.add_argument("--source", action="append", required=True, metavar="SRC",
                   help="a registered log (atlas), a recorded run (squad, squad:prospective) or a "
                        "tidy CSV/Parquet/JSONL file; repeat for several")
    p.add_argument("-p", "--param", nargs=2, action="append", metavar=("KEY", "VALUE"),
                   help="override a parameter; VALUE is read as YAML (20, 0.5, \"[0, 0.2]\")")
    p.add_argument("--cut", action="append", metavar="SRC=CUT",
                   help="binarise SRC's confidence at 'median' or a number in [0, 1]")
    p.add_argument("--out", required=True, help="folder for the executed notebook and html/")
    p.add_argument("--no-html", action="store_true", help="execute, but do not render")
    p.add_argument("--manifest", default=None,
                   help="manifest to take NAME from (default notebooks/manifest.yml); its source "
                        "paths are relative to the repository")
    p.set_defaults(func=_chapter)

    p = sub.add_parser("example-data", help="write a simulated response file in the tidy layout")
    p.add_argument("--out", required=True, help="file to write: .csv, .parquet or .jsonl")
    p.add_argument("--kappa", type=float, default=0.0, help="planted individual signal (default 0)")
    p.add_argument("--models", type=int, default=11, help="number of models (default 11)")
    p.add_argument("--items", type=int, default=200, help="items per benchmark (default 200)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.set_defaults(func=_example_data)

    p = sub.add_parser("place", help="ask one new model the way a public panel was asked and place "
                                     "it among the panel's models (one page)")
    p.add_argument("--panel", default="calibration_study", help="the panel (calibration_study)")
    p.add_argument("--model", default="", help="openai/NAME (with --api-base) or local/NAME")
    p.add_argument("--api-base", default=None, help="an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--n-items", type=int, default=200, help="MMLU-Pro items to ask (default 200)")
    p.add_argument("--seed", type=int, default=0, help="which items are drawn (default 0)")
    p.add_argument("--probe", default="verbal_confidence",
                   help="verbal_confidence (stated number) or logit_confidence (mean token probability)")
    p.add_argument("--responses", default=None, help="a tidy file of the model's answers instead of live calls")
    p.add_argument("--max-tokens", type=int, default=None, help="cap on the reply (default: the study's 1024)")
    p.add_argument("--concurrency", type=int, default=4, help="calls in flight (default 4)")
    p.add_argument("--timeout", type=float, default=600.0, metavar="T",
                   help="seconds per call before it is tried again (default 600: replies run to 1024 tokens)")
    p.add_argument("--max-retries", type=int, default=2,
                   help="tries after the first of a call that failed (default 2)")
    p.add_argument("--cache", default=None, help="response cache folder (default: the user cache)")
    p.add_argument("--out", required=True, help="folder for responses.parquet, place.ipynb and place.html")
    p.add_argument("--no-html", action="store_true", help="execute the page, do not convert it to HTML")
    p.add_argument("--no-progress", action="store_true", help="no line per answered call")
    p.set_defaults(func=_place)

    p = sub.add_parser("replicate", help="ask your models both papers' designs (sized by the power "
                                         "chapter, priced first) and build the book on their answers")
    p.add_argument("--models", required=True, help="comma-separated litellm ids (3 or more): openai/NAME "
                   "with --api-base, hosted ids with keys in the environment, local/NAME, or --router names")
    p.add_argument("--api-base", default=None, help="OpenAI-compatible server of openai/NAME models")
    p.add_argument("--router", default=None, metavar="FILE.yaml", help="litellm Router model_list file")
    p.add_argument("--benchmarks", default=None, help="comma-separated subset of paper 1's six "
                   "(default all six; SciCode only where its sandbox grader runs)")
    p.add_argument("--n-items", type=int, default=None, help="items per benchmark (default: the power "
                   "chapter's size for this many models)")
    p.add_argument("--no-audit", action="store_true", help="leave out paper 2's policies on the audit set")
    p.add_argument("--batch", action="store_true", help="send calls through the providers' batch APIs")
    p.add_argument("--budget", type=float, default=None, metavar="USD",
                   help="refuse the run, before any call, when its estimated cost exceeds USD")
    p.add_argument("--plan", action="store_true", help="print sizes, calls, tokens and cost; ask nothing")
    p.add_argument("--out", default=None, help="folder for responses.parquet and the book")
    p.add_argument("--cache", default=None, help="response cache folder (default: the user cache)")
    p.add_argument("--concurrency", type=int, default=8, help="calls in flight per model (default 8)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per call (default 60)")
    p.add_argument("--max-retries", type=int, default=4,
                   help="retries of a call on a timeout, 429, 5xx or broken reply (default 4)")
    p.add_argument("--max-tokens", type=int, default=None, help="override the templates' reply caps")
    p.add_argument("--seed", type=int, default=0, help="which items are drawn, and the calls' seed")
    p.add_argument("--jobs", "-j", type=int, default=None, help="chapters executed at once")
    p.add_argument("--no-book", action="store_true", help="ask and write responses.parquet only")
    p.add_argument("--panel", default=None, help="also ask each model this public panel's own protocol "
                   "and place it among the panel's models (calibration_study)")
    p.add_argument("--panel-items", type=int, default=200, help="items of the panel's protocol (default 200)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=_replicate)

    p = sub.add_parser("collect", help="record the runs of data/responses/runs.yml (local panel)",
                       add_help=False)
    p.set_defaults(func=None)

    p = sub.add_parser("probe", help="record the miscalibration chapter's hidden-state study into "
                                     "data/probe/ (needs torch)", add_help=False)
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
        from metacog.elicit.record import main as collect_main

        return collect_main(argv[1:])
    if argv and argv[0] == "probe":
        from metacog.hypotheses.miscalibration.hidden import main as probe_main

        return probe_main(argv[1:])
    args = parser.parse_args(argv)
    return args.func(args)


def run(argv: list[str] | None = None) -> int:
    """The console entry point: :func:`main`, with Ctrl-C ending the command quietly
    (exit 130, one line, no traceback)."""
    try:
        return main(argv)
    except KeyboardInterrupt:
        print("metacog: interrupted; finished work is kept (cached answers, executed chapters).",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(run())
