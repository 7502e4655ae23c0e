"""The ``reteco`` command, one module per subcommand (``COMMANDS``).

Exit codes (``reteco.problems``; pages/messages.md): 0 done; 1 input that cannot be used (the
messages say what to fix, with file and line); 2 the command line is wrong (argparse, or
``UsageError``); 3 an internal error of reteco (``internal_error``: one line, the traceback only
with RETECO_DEBUG=1); 4 work that could not be finished (the judge's commands).

Only the module of the command being run is imported: scoring does not load the judge, the
bundle builder or the labelling workflow (asyncio, the openai SDK, tqdm: ~0.1-0.7 s).
``reteco --help`` (or an unknown command) loads them all to list them.

The library's log records (``reteco.judge``, ``reteco.llm``, the HTTP client's) are not the
command's output: each command prints what matters of a run in its own words (the judge's model
warning, a stopped run, a failed preflight). Without a handler, Python's last-resort handler
would print every warning record a second time, bare (``library_logs``). With RETECO_DEBUG=1
they are shown, marked as the log's.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from reteco import __version__
from reteco.arrow_memory import use_scoring_memory_pool
from reteco.llm.cache import JudgeCacheError
from reteco.problems import EXIT_INPUT, EXIT_OK, EXIT_USAGE, InputError, UsageError, internal_error

# command -> (its module: under reteco.commands, or under reteco.workbench.commands for "workbench.X",
# its function that adds the command's parser). The scorer's commands are what participants run
# (starting_kit/README.md); the workbench's are the organizers' and are offered only where the
# workbench is installed (a bundle's vendor/ and the starting kit carry the scorer alone).
COMMANDS: dict[str, tuple[str, str]] = {
    "synth": ("synth", "add_parser"),
    "prepare": ("prepare", "add_parser"),
    "score": ("score", "add_parser"),
    "validate": ("score", "add_parser"),
    "compare": ("compare", "add_parser"),
    "factir-qrels": ("factir_qrels", "add_parser"),
    "setup-wordnet": ("setup_wordnet", "add_setup_wordnet_parser"),
    "judge": ("workbench.judge", "add_judge_parser"),
    "judge-meta": ("workbench.judge_meta", "add_judge_meta_parser"),
    "judge-compare": ("workbench.judge_compare", "add_parser"),
    "golden-sheet": ("workbench.golden_sheet", "add_parser"),
    "agreement": ("workbench.agreement", "add_agreement_parser"),
    "human-sample": ("workbench.human_sample", "add_human_sample_parser"),
    "judge-report": ("workbench.judge_report", "add_judge_report_parser"),
    "judge-submissions": ("workbench.judge_submissions", "add_parser"),
    "judge-probe": ("workbench.judge_probe", "add_parser"),
    "freeze-prompt": ("workbench.freeze_prompt", "add_parser"),
    "pool": ("workbench.temporal_labels", "add_pool_parser"),
    "label-temporal": ("workbench.temporal_labels", "add_label_temporal_parser"),
    "label-export": ("workbench.temporal_labels", "add_label_export_parser"),
    "label-import": ("workbench.temporal_labels", "add_label_import_parser"),
    "relevance-pool": ("workbench.temporal_labels", "add_relevance_pool_parser"),
    "label-relevance": ("workbench.temporal_labels", "add_label_relevance_parser"),
    "leaderboard": ("workbench.leaderboard", "add_leaderboard_parser"),
    "bundle": ("workbench.bundle", "add_parser"),
    "check-bundle": ("workbench.check_bundle", "add_parser"),
}
WORKBENCH = "workbench."


def command_module(module: str) -> str:
    """The dotted name of a ``COMMANDS`` module: ``reteco.commands.X``, or for ``workbench.X``
    ``reteco.workbench.commands.X``."""
    if module.startswith(WORKBENCH):
        return f"reteco.workbench.commands.{module[len(WORKBENCH):]}"
    return f"reteco.commands.{module}"


def available_commands() -> list[str]:
    """The commands this copy of reteco can run: all of them where the workbench is installed,
    the scorer's alone in a copy without it (a bundle's ``vendor/``, the starting kit)."""
    workbench = importlib.util.find_spec("reteco.workbench") is not None
    return [name for name, (module, _) in COMMANDS.items() if workbench or not module.startswith(WORKBENCH)]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    commands = available_commands()
    if command in COMMANDS and command not in commands:
        print(f"reteco {command}: error: an organizers' command of the workbench (reteco.workbench), which this "
              "copy of reteco does not carry: a bundle's vendor/ and the starting kit hold the scorer alone. "
              "Install reteco from its repository for the organizers' tools.", file=sys.stderr)
        return EXIT_USAGE
    parser = build_parser([command] if command in commands else commands)
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:  # reported by the command's own parser, with its usage (not the list of commands)
            own_parser(parser, args.command).error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as exc:  # argparse has printed its message (or --help, --version)
        return EXIT_OK if exc.code in (0, None) else EXIT_USAGE
    try:
        use_scoring_memory_pool()
        with library_logs(args.command):
            return int(args.func(args) or 0)
    except InputError as exc:
        exc.problems.print(sys.stderr)
        return EXIT_INPUT
    except UsageError as exc:
        print(f"reteco {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except JudgeCacheError as exc:  # the organizer's cache, never a team's fault nor a bug: exit 1 naming it
        InputError(str(exc), "--judge-cache").problems.print(sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        return 0
    except Exception as exc:  # noqa: BLE001 - an internal error: never a raw traceback by default
        return internal_error(exc)


@contextmanager
def library_logs(command: str) -> Iterator[None]:
    """While a command runs, what becomes of the log records of the library and of the packages it
    uses: dropped (a handler on the root logger, so that the last-resort handler never prints
    them), or with RETECO_DEBUG=1 printed on stderr, each marked ``reteco COMMAND: log: LOGGER:
    LEVEL:`` (reteco's from DEBUG up, other packages' from WARNING). The logging setup is as it
    was afterwards (tests call ``main`` many times in one process). The leaderboard's worker
    processes drop them too (``reteco.workbench.leaderboard.standings``)."""
    root, package = logging.getLogger(), logging.getLogger("reteco")
    level = package.level
    if os.environ.get("RETECO_DEBUG"):
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(f"reteco {command}: log: %(name)s: %(levelname)s: %(message)s"))
        package.setLevel(logging.DEBUG)
    else:
        handler = logging.NullHandler()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        package.setLevel(level)


def own_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of ``command`` inside ``build_parser``'s parser."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001 - argparse has no public accessor
    return sub.choices[command]


def build_parser(commands: list[str]) -> argparse.ArgumentParser:
    """The parser of ``commands`` (each registered once, in ``COMMANDS`` order)."""
    parser = argparse.ArgumentParser(prog="reteco", description="RETECO (SemEval-2027 Task 1) evaluation")
    parser.add_argument("--version", action="version", version=f"reteco {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    done: set[tuple[str, str]] = set()
    for name in COMMANDS:
        entry = COMMANDS[name]
        if name in commands and entry not in done:
            done.add(entry)
            module, function = entry
            getattr(importlib.import_module(command_module(module)), function)(sub)
    return parser


if __name__ == "__main__":
    sys.exit(main())
