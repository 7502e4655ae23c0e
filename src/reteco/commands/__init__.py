"""The ``reteco`` command, one module per subcommand (``COMMANDS``).

Exit codes (``reteco.problems``; docs/participants/messages.md): 0 done; 1 input that cannot be used (the
messages say what to fix, with file and line); 2 the command line is wrong (argparse, or
``UsageError``); 3 an internal error of reteco (``internal_error``: one line, the traceback only
with RETECO_DEBUG=1); 4 work that could not be finished (the judge's commands).

Only the module of the command being run is imported: scoring does not load the judge, the
bundle builder or the labelling workflow (asyncio, the openai SDK, tqdm: ~0.1-0.7 s).
``reteco --help`` (or an unknown command) loads them all to list them.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from reteco import __version__
from reteco.arrow_memory import use_scoring_memory_pool
from reteco.problems import EXIT_INPUT, EXIT_OK, EXIT_USAGE, InputError, UsageError, internal_error

# command -> (module under reteco.commands, its function that adds the command's parser)
COMMANDS: dict[str, tuple[str, str]] = {
    "synth": ("synth", "add_parser"),
    "prepare": ("prepare", "add_parser"),
    "score": ("score", "add_parser"),
    "validate": ("score", "add_parser"),
    "factir-qrels": ("factir_qrels", "add_parser"),
    "setup-wordnet": ("setup_wordnet", "add_setup_wordnet_parser"),
    "judge": ("judge", "add_judge_parser"),
    "judge-meta": ("judge_meta", "add_judge_meta_parser"),
    "agreement": ("agreement", "add_agreement_parser"),
    "human-sample": ("human_sample", "add_human_sample_parser"),
    "judge-report": ("judge_report", "add_judge_report_parser"),
    "judge-submissions": ("judge_submissions", "add_parser"),
    "pool": ("temporal_labels", "add_pool_parser"),
    "label-temporal": ("temporal_labels", "add_label_temporal_parser"),
    "label-export": ("temporal_labels", "add_label_export_parser"),
    "label-import": ("temporal_labels", "add_label_import_parser"),
    "leaderboard": ("leaderboard", "add_leaderboard_parser"),
    "bundle": ("bundle", "add_parser"),
    "check-bundle": ("check_bundle", "add_parser"),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser([command] if command in COMMANDS else list(COMMANDS))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse has printed its message (or --help, --version)
        return EXIT_OK if exc.code in (0, None) else EXIT_USAGE
    try:
        use_scoring_memory_pool()
        return int(args.func(args) or 0)
    except InputError as exc:
        exc.problems.print(sys.stderr)
        return EXIT_INPUT
    except UsageError as exc:
        print(f"reteco {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        return 0
    except Exception as exc:  # noqa: BLE001 - an internal error: never a raw traceback by default
        return internal_error(exc)


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
            getattr(importlib.import_module(f"reteco.commands.{module}"), function)(sub)
    return parser


if __name__ == "__main__":
    sys.exit(main())
