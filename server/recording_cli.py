"""``finmcp-server recordings bake | import | export``: fill and move recordings files.

- ``recordings bake --inventory NAME --calls FILE --recordings DB``: simulate every call in FILE and
  record the outputs;
- ``recordings import --finmcp FILE... | --jsonl FILE --recordings DB``: real outputs from official
  FinMCP-Bench sample files (``imported:<file>``), or a JSONL export;
- ``recordings export --recordings DB --output FILE.jsonl``: responses as JSONL, in a fixed order.

The parser part is light (``finmcp-server --help`` builds it); each command imports the store, the
inventories and the simulator when it runs.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from finmcp.recordings.errors import RecordingsError
from finmcp.recordings.plumbing.flags import add_recordings


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


@dataclass(frozen=True)
class BakeOptions:
    """``recordings bake``: simulate every call in ``calls`` and record the outputs into ``recordings``."""

    calls: Path
    recordings: Path
    inventory: str = "finmcp65"
    seed: int = 0
    replace: bool = False


@dataclass(frozen=True)
class ImportOptions:
    """``recordings import``: official FinMCP-Bench sample files (``finmcp``) or a JSONL export (``jsonl``)."""

    recordings: Path
    finmcp: tuple[Path, ...] = ()
    jsonl: Path | None = None
    inventory: str = "qieman79"


@dataclass(frozen=True)
class ExportOptions:
    """``recordings export``: the recorded responses of ``recordings`` (one inventory, or all) as JSONL."""

    recordings: Path
    output: Path
    inventory: str | None = None


RecordingCommand = BakeOptions | ImportOptions | ExportOptions


def recording_options(args: argparse.Namespace) -> RecordingCommand:
    """The typed options of a parsed ``recordings bake | import | export`` command line."""
    if args.recordings_command == "bake":
        return BakeOptions(args.calls, args.recordings, args.inventory, args.seed, args.replace)
    if args.recordings_command == "import":
        return ImportOptions(args.recordings, tuple(args.finmcp or ()), args.jsonl, args.inventory)
    return ExportOptions(args.recordings, args.output, args.inventory)


def run_recording_command(args: argparse.Namespace) -> int:
    """Run bake / import / export; errors surface as RecordingsError or ValueError for the caller."""
    return run_recordings(recording_options(args))


def run_recordings(options: RecordingCommand) -> int:
    """Run one recordings command; returns the exit status (1: some calls could not be baked)."""
    if isinstance(options, BakeOptions):
        return bake_recordings(options)
    if isinstance(options, ImportOptions):
        return import_recordings(options)
    return export_recordings(options)


def bake_recordings(options: BakeOptions) -> int:
    """Simulate and record every call of ``options.calls``; prints a summary and the first errors."""
    from finmcp.recordings.store import RecordingStore
    from finmcp.server.sim.bake import bake, read_calls
    from finmcp.tool_specs.inventory import load_inventory

    inventory = load_inventory(options.inventory)
    calls = read_calls(options.calls)
    with RecordingStore.open(options.recordings) as store:
        report = bake(inventory, calls, store, seed=options.seed, replace=options.replace)
    print(f"baked {len(calls)} calls into {options.recordings}: {report.summary()}")
    for error in report.errors[:20]:
        print(f"  error: {error}")
    return 1 if report.errors else 0


def import_recordings(options: ImportOptions) -> int:
    """Import real outputs (FinMCP-Bench sample files) or a JSONL export; prints what was imported."""
    from finmcp.recordings.import_finmcp import import_finmcp
    from finmcp.recordings.jsonl import import_jsonl
    from finmcp.recordings.store import RecordingStore
    from finmcp.tool_specs.inventory import load_inventory

    with RecordingStore.open(options.recordings) as store:
        if options.jsonl is not None:
            counts = import_jsonl(store, options.jsonl)
            print(f"imported {options.jsonl}: {dict(counts)}")
            return 0
        inventory = load_inventory(options.inventory)
        schemas = {t.name: t.input_schema for t in inventory}
        for path in options.finmcp:
            report = import_finmcp(store, path, inventory.name, set(inventory.names), schemas)
            reasons: dict[str, int] = {}
            for skipped in report.skipped:
                reasons[skipped.reason] = reasons.get(skipped.reason, 0) + 1
            print(
                f"{path.name}: imported {report.imported}, identical {report.identical}, skipped {reasons or 0}"
            )
    return 0


def export_recordings(options: ExportOptions) -> int:
    """Write the recorded responses as JSONL in a fixed order; prints how many."""
    from finmcp.recordings.jsonl import export_jsonl
    from finmcp.recordings.store import RecordingStore

    if not options.recordings.is_file():
        raise RecordingsError(f"--recordings {options.recordings}: no such file")
    with RecordingStore.open(options.recordings) as store:
        lines = export_jsonl(store, options.output, inventory=options.inventory)
    print(f"exported {lines} responses to {options.output}")
    return 0
