"""``finmcp-server recordings bake | import | export``: fill and move recordings files.

- ``recordings bake --inventory NAME --calls FILE --recordings DB``: simulate every call in FILE and
  record the outputs;
- ``recordings import --finmcp FILE... | --jsonl FILE --recordings DB``: real outputs from official
  FinMCP-Bench sample files (``imported:<file>``), or a JSONL export;
- ``recordings export --recordings DB --output FILE.jsonl``: responses as JSONL, in a fixed order.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Protocol

from recordings.errors import RecordingsError
from recordings.import_finmcp import import_finmcp
from recordings.jsonl import export_jsonl, import_jsonl
from recordings.plumbing.flags import add_recordings
from recordings.store import RecordingStore
from tool_specs.inventory import load_inventory


class SubcommandAdder(Protocol):
    """What ``ArgumentParser.add_subparsers()`` returns, as far as adding commands goes."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


def add_recording_commands(sub: SubcommandAdder) -> None:
    """Register ``recordings`` with its bake, import and export verbs."""
    group = sub.add_parser("recordings", help="fill and move recordings files: bake, import, export")
    verbs = group.add_subparsers(dest="recordings_command", required=True)
    bake = verbs.add_parser("bake", help="record simulated outputs for a list of calls")
    bake.add_argument("--inventory", default="finmcp65", help="built-in name or inventory file")
    bake.add_argument(
        "--calls", type=Path, required=True, help="JSONL calls, reference samples or FinMCP samples"
    )
    add_recordings(bake, type=Path, required=True, help="recordings file to create or extend")
    bake.add_argument("--seed", type=int, default=0, help="world seed (default 0)")
    bake.add_argument("--replace", action="store_true", help="overwrite outputs already recorded")

    imp = verbs.add_parser("import", help="import real outputs (FinMCP-Bench samples) or a JSONL export")
    source = imp.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--finmcp", type=Path, nargs="+", metavar="FILE", help="official FinMCP-Bench sample files"
    )
    source.add_argument("--jsonl", type=Path, metavar="FILE", help="a finmcp responses JSONL export")
    imp.add_argument("--inventory", default="qieman79", help="inventory the FinMCP outputs belong to")
    add_recordings(imp, type=Path, required=True, help="recordings file to create or extend")

    exp = verbs.add_parser("export", help="export recorded responses as JSONL")
    add_recordings(exp, type=Path, required=True, help="recordings file to read")
    exp.add_argument("--output", type=Path, required=True, help="JSONL file to write")
    exp.add_argument("--inventory", help="only this inventory")


def run_recording_command(args: argparse.Namespace) -> int:
    """Run bake / import / export; errors surface as RecordingsError or ValueError for the caller."""
    if args.recordings_command == "bake":
        return _bake(args)
    if args.recordings_command == "import":
        return _import(args)
    return _export(args)


def _bake(args: argparse.Namespace) -> int:
    from server.sim.bake import bake, read_calls

    inventory = load_inventory(args.inventory)
    calls = read_calls(args.calls)
    with RecordingStore.open(args.recordings) as store:
        report = bake(inventory, calls, store, seed=args.seed, replace=args.replace)
    print(f"baked {len(calls)} calls into {args.recordings}: {report.summary()}")
    for error in report.errors[:20]:
        print(f"  error: {error}")
    return 1 if report.errors else 0


def _import(args: argparse.Namespace) -> int:
    with RecordingStore.open(args.recordings) as store:
        if args.jsonl:
            counts = import_jsonl(store, args.jsonl)
            print(f"imported {args.jsonl}: {dict(counts)}")
            return 0
        inventory = load_inventory(args.inventory)
        schemas = {t.name: t.input_schema for t in inventory}
        for path in args.finmcp:
            report = import_finmcp(store, path, inventory.name, set(inventory.names), schemas)
            reasons: dict[str, int] = {}
            for skipped in report.skipped:
                reasons[skipped.reason] = reasons.get(skipped.reason, 0) + 1
            print(
                f"{path.name}: imported {report.imported}, identical {report.identical}, skipped {reasons or 0}"
            )
    return 0


def _export(args: argparse.Namespace) -> int:
    if not args.recordings.is_file():
        raise RecordingsError(f"--recordings {args.recordings}: no such file")
    with RecordingStore.open(args.recordings) as store:
        lines = export_jsonl(store, args.output, inventory=args.inventory)
    print(f"exported {lines} responses to {args.output}")
    return 0
