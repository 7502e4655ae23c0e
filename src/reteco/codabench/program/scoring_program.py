"""The Codabench scoring program's body: ``score.py INPUT OUTPUT``.

The compute worker mounts the reference data at ``INPUT/ref`` and the participant's submission
at ``INPUT/res``, and collects ``OUTPUT/scores.json``. The sub-track comes from the reference
data (``INPUT/ref/reference.json``), so one program serves every task. Its log is shown to the
participant: it prints warnings about their input and the scores, never reference data.

The phase comes from ``INPUT/ref/phase.json``, written into each phase's reference data when
the bundle is built (``reteco.formats.phase_record``): the worker tells a scoring program nothing
about the phase. Its ``per_topic`` flag decides whether per-topic figures are written
(details.json, detailed_results.html); without a phase.json they are withheld, which is the safe
side on hidden labels.

A submission that holds one folder per sub-track (``1a/``, ``2c/`` ..., the starting kit's zip
of all of them) is read from the folder of this program's sub-track, by the same rule as
``reteco score`` (``reteco.formats.submission.Submission.for_subtrack``).

Outputs (``reteco.outputs.results``, the same as ``reteco score``): ``details.json``,
``detailed_results.html`` and, last, ``scores.json`` (finite numbers only; with ``--scores-txt``,
CodaLab Competitions v1.5's ``scores.txt`` of the same figures too, just before it), with every absent
key's reason in the log, ``details.json["absent_scores"]`` and the page. A required key missing
from the scorer's output is an internal error, never a silent empty column; so is any
unexpected exception (its traceback only with ``RETECO_DEBUG=1``, since an exception's text
could quote reference data).

The judge. Where the reference data holds a judge setup (``judge/``, written by ``reteco bundle
--judge-config``: ``reteco.codabench.program.judge_setup``, verified before use), 2b and 2c are judged
here, within the run's time limit (``reteco.codabench.program.judge_plan``: the deadline given to
``run_judge``) and the setup's budgets (``max_calls_per_run``, ``max_tokens_per_run``). A run
that the deadline, a budget or the judge's service stops writes no judge key: the reason (in the participant's
words: no address, no key, no server text) and how many turns were judged are in the log and
the page, the retrieval and text figures are written, and the exit is 0 for 2c (ranked by
nDCG@10) and 4 for 2b (``refuse_unranked``: a 2b run left without its ranked figure is failed,
never ranked with an empty column). Every request, reply and verdict of the run is written, as it
arrives, into the scoring output's ``judge_archive.sqlite``: the run's judge cache itself
(``reteco.llm.cache``, single-file mode: rollback journal, ``synchronous=FULL``), so the file is a
valid archive holding every verdict paid for even when the program is killed; the organizers
import it into their cache with ``reteco judge --import-archive`` (a killed run's ``-journal``
beside it is rolled back on import) to audit, disclose and re-score without paying twice. (On
Codabench the scoring output of a failed or timed-out run is not uploaded: ``run_wrapper`` raises
before ``push_output``; the archive helps where the output survives.) The phases that judge
hide their scoring output from participants (``hide_score_output``, checked by check-bundle).
Without a judge setup the judge does not run here: its keys are absent with that reason, and
the organizers judge the answers after the phase (``reteco judge-submissions``). A text metric
that cannot run here (BERTScore without a model in the image) is absent with its reason only,
never the set-up advice meant for the organizers (``setup_advice=False``): a participant cannot
act on it.

Exit codes (``reteco.problems``, as for the ``reteco`` command): 0 scored; 1 the submission
cannot be used (the log and ``detailed_results.html`` say why; no ``scores.json``); 2 the
program was called wrongly; 3 an internal error of reteco (``reteco.problems.internal_error``; no
``scores.json`` is written, as it is written last); 4 a judged phase's run whose ranked figure
is absent (``refuse_unranked``: 2b's judge mean when its judging did not finish), failed so that
an empty ranked column never reaches the leaderboard, where it would rank first. Codabench's
worker (``run_wrapper``, ``compute_worker/compute_worker.py``, c7dbc75) posts neither the scores
nor the output folder of a failed run (only its logs, and the detailed results page it sent
during the run): such a run's judge archive is not kept by the platform, and the organizers judge
its answers after the phase from the bulk download (``reteco judge-submissions``).
"""

from __future__ import annotations

import json
import logging
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

from reteco import __version__
from reteco.arrow_memory import use_scoring_memory_pool
from reteco.codabench.program.judge_plan import Startup, measure_startup, plan_judging
from reteco.problems import EXIT_INCOMPLETE, EXIT_INPUT, EXIT_OK, EXIT_USAGE, InputError, internal_error
from reteco.subtracks import KEYS, SUBTRACKS

# CodaLab Competitions v1.5 passes the same INPUT (ref/, res/) and OUTPUT folders as Codabench,
# so the paths cannot tell the platforms apart: the v1.5 bundle's ``metadata`` command adds this
# flag (reteco.workbench.codabench.bundle.codalab), and its worker fails a run without scores.txt.
SCORES_TXT_FLAG = "--scores-txt"


def main(argv: list[str], *, own_process: bool = False) -> int:
    """Score ``INPUT/res`` against ``INPUT/ref`` into ``OUTPUT``; exit 0, 1 (input), 2 (usage) or
    3 (internal) or 4 (a judged run without its ranked figure: refuse_unranked). ``own_process``:
    the process was started to run this program (``score.py``), so its age here is what the
    interpreter and the imports took, which the judging deadline keeps back and scales its
    reserve by (``judge_plan``); called inside another program (the tests, ``reteco
    screenshots``) it is not."""
    started = time.monotonic()  # the judging deadline counts from here (judge_plan)
    startup = measure_startup() if own_process else None
    scores_txt = SCORES_TXT_FLAG in argv
    paths = [a for a in argv if a != SCORES_TXT_FLAG]
    if len(paths) != 2:
        print(f"usage: score.py INPUT_DIR OUTPUT_DIR [{SCORES_TXT_FLAG}] (INPUT_DIR holds ref/ and res/)",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        return _main(Path(paths[0]), Path(paths[1]), started, scores_txt=scores_txt, startup=startup)
    except Exception as exc:  # noqa: BLE001 - never a raw traceback in the log: it may quote reference data
        return internal_error(exc)


def _main(input_dir: Path, output_dir: Path, started: float, *, scores_txt: bool = False,
          startup: Startup | None = None) -> int:
    use_scoring_memory_pool()
    from reteco.codabench.program.judge_setup import JUDGED_SUBTRACKS, read_judge_setup
    from reteco.formats.phase_record import read_phase
    from reteco.formats.reference import Reference, ReferenceDataError
    from reteco.outputs.results import MissingScoreError, absent_lines, write_refusal_page, write_results
    from reteco.scoring.submission import score_submission

    print(f"reteco {__version__}")
    environment = image_modules()
    print("modules: " + ", ".join(f"{name} {version}" for name, version in environment.items()))
    _use_vendored_wordnet()
    phase, note = read_phase(input_dir / "ref")
    subtrack = None
    try:
        reference = Reference.read(input_dir / "ref")
        subtrack = reference.subtrack
        print(f"sub-track {subtrack}, phase {phase['name']}, reference {reference.fingerprint()}")
        if note:
            print(f"note: {note}")
        elif not phase["per_topic"]:
            print("per-topic figures are withheld in this phase (hidden labels)")
        judge_config = read_judge_setup(input_dir / "ref") if subtrack in JUDGED_SUBTRACKS else None
        if judge_config is None:
            # No judge in this phase's reference data: 2b/2c are scored on the rest now and the
            # organizers judge the answers after the phase (`reteco judge-submissions`).
            result = score_submission(reference, input_dir / "res", per_topic=bool(phase["per_topic"]),
                                      run_judge_now=False, setup_advice=False)
        else:
            result = _score_with_judge(reference, input_dir / "res", output_dir, phase, judge_config, started,
                                       startup)
    except InputError as exc:
        lines = exc.problems.lines()
        if isinstance(exc, ReferenceDataError):
            # The organizers' files, not the participant's: say so, and whom to tell.
            lines.append("the task's reference data cannot be used; this is not a problem of your submission: "
                         "please tell the organizers")
        for line in lines:
            print(line, file=sys.stderr)
        if not isinstance(exc, ReferenceDataError):
            print("the submission could not be scored: fix the errors above and submit again", file=sys.stderr)
        write_refusal_page(output_dir, subtrack, phase, lines)
        return EXIT_INPUT

    for line in result.problems.lines():
        print(line)
    result.details["environment"] = environment
    try:
        absent = write_results(output_dir, result, subtrack, phase, judge_skipped=judge_config is None,
                               scores_txt=scores_txt)
    except MissingScoreError as exc:
        print(f"reteco: {exc}", file=sys.stderr)  # leaderboard keys only: no reference data
        raise
    print(json.dumps(result.scores, indent=2))
    for line in absent_lines(absent, result.problems.lines()):
        print(line)
    return refuse_unranked(output_dir, subtrack, result.scores, judged=judge_config is not None)


UNRANKED_SCORES = "unranked_scores.json"  # scores.json of a run refused by refuse_unranked


def refuse_unranked(output_dir: Path, subtrack: str, scores: dict, *, judged: bool) -> int:
    """EXIT_OK, or EXIT_INCOMPLETE for a run of a judged phase whose ranked figure is absent.

    The leaderboard orders by the sub-track's ranked column descending, and on PostgreSQL a
    missing score sorts first (Codabench issues #1284, #2321, #2470, #2512): a 2b run whose
    judging did not finish (deadline, call budget, the service failing or unreachable, too many
    invalid judgments) would rank above every judged one. Such a run is failed instead, after
    everything was written: the log and the detailed results page (which the worker sends during
    the run) say why, the judge's archive and details.json stay in the output. Its scores.json is
    renamed ``UNRANKED_SCORES``, so that no worker can post it. Which sub-track's ranked figure
    can be absent is the table's (``SubTrack.ranked_may_be_absent``). In a phase that does not
    judge, the judge keys are absent for every run alike: nothing is refused there (the
    leaderboard is then not a ranking: pages/evaluation.md).
    """
    ranked = SUBTRACKS[subtrack].ranked
    if not judged or not SUBTRACKS[subtrack].ranked_may_be_absent or ranked in scores:
        return EXIT_OK
    scores_file = output_dir / "scores.json"
    if scores_file.is_file():
        scores_file.replace(output_dir / UNRANKED_SCORES)
    for line in (
        f"this submission is not put on the leaderboard: its ranked figure, {KEYS[ranked].title}, is absent "
        "(the reason is above), and an empty ranked figure would be listed first",
        "nothing is wrong with your files: the organizers judge this submission after the phase, with the same "
        "judge, and put its figures on the leaderboard then; until then your previous ranked submission, if any, "
        "stays there",
    ):
        print(line, file=sys.stderr)
    return EXIT_INCOMPLETE


_DROP_LOG_RECORDS = logging.NullHandler()


def _score_with_judge(reference, submission: Path, output_dir: Path, phase: dict, config, started: float,
                      startup: Startup | None):
    """Score with the judge inside the run's limits; the run's cache is the output's archive
    (module docstring). Prints the plan and what the judge did: never the endpoint."""
    from reteco.formats.phase_record import time_limit
    from reteco.llm.cache import ARCHIVE_FILE
    from reteco.scoring.submission import score_submission

    # The judge's log lines name the endpoint and quote the server's answers, and Python's
    # last-resort handler would print them on stderr, the participant's log: a handler that
    # drops them takes its place. What the run did is printed below in the participant's words,
    # and kept whole in details.json and the archive (the organizers'). The program is one run
    # per process, so the handler stays; added once, however often main is called (the tests).
    if _DROP_LOG_RECORDS not in logging.getLogger().handlers:
        logging.getLogger().addHandler(_DROP_LOG_RECORDS)
    plan = plan_judging(started, time_limit(phase), len(reference.topics), startup)
    budget = "no call budget" if config.max_calls_per_run is None else f"at most {config.max_calls_per_run} requests"
    if config.max_tokens_per_run is not None:
        budget += f" and {config.max_tokens_per_run} tokens"
    print(f"judge: {config.model}, prompt version {config.prompt_version}, signature {config.signature}; up to "
          f"{config.concurrency} requests at once, {budget}; judging ends {max(plan.judging_until_s, 0):.0f} s into "
          f"this run's {plan.limit_s} s ({plan.reserve_s:.0f} s kept back for the start and the work after judging, "
          f"the latter scaled x{plan.slowdown:.1f} by how slowly this run started)")
    # The run's cache IS the archive in the output (a .sqlite path: JudgeCache's single-file,
    # rollback-journal mode): each verdict is on disk as it arrives, so a platform time-out
    # (a kill) keeps every judgment paid for until then.
    result = score_submission(
        reference, submission, per_topic=bool(phase["per_topic"]), judge_config=config,
        cache_dir=output_dir / ARCHIVE_FILE, run_judge_now=True, judge_deadline=plan.deadline,
        judge_max_calls=config.max_calls_per_run, setup_advice=False,
    )
    judge = result.details.get("generation", {}).get("judge", {})
    if "window" in judge:  # the plan beside what the text metrics took before judging (judge_plan)
        judge["plan"] = plan.as_dict()
        print(f"judge: the text metrics took {judge['window']['text_metrics_s']:.1f} s before judging, which had "
              f"{max(judge['window']['judging_window_s'], 0):.0f} s left")
    run = judge.get("run")
    if run:
        print(f"judge: {run['judgments']} judgments: {run['judged_now']} judged now with {run['http_requests']} HTTP "
              f"requests, {run['from_cache']} answered from judgments already present, {run['unfinished']} unfinished; "
              f"every request and reply is kept in {ARCHIVE_FILE} (the organizers')")
    if judge.get("stopped"):
        print("judge: the judge columns of this submission stay empty; the organizers judge its answers after the phase")
    return result


def image_modules() -> dict[str, str]:
    """Python's version and that of each distribution the program takes from the image
    (``vendor/VENDOR.json`` ``from_image``; numpy, pandas and pyyaml without one), for the log and
    ``details.json["environment"]``: a rebuilt image shows here (``reteco.codabench.program.image``).
    ``score.py`` has already refused, with exit 3 and the missing names, an image lacking one."""
    from reteco.codabench.program.image import SIMULATED

    manifest = Path(__file__).resolve().parents[3] / "VENDOR.json"  # vendor/VENDOR.json in a bundle
    try:
        names = json.loads(manifest.read_text(encoding="utf-8")).get("from_image") or SIMULATED
    except (OSError, ValueError, AttributeError):
        names = SIMULATED
    found = {"python": platform.python_version()}
    for name in sorted(names):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "missing"
    return found


def _use_vendored_wordnet() -> None:
    """Point METEOR at the WordNet the bundle carries (``vendor/nltk_data/corpora/wordnet``).

    Both variables are needed: nltk reads corpora only below a folder of its data path
    (``NLTK_DATA``), and reteco checks the exact folder (``RETECO_WORDNET``). Set before nltk is
    imported; a value already configured is kept.
    """
    from reteco.formats.wordnet import ENV_VAR

    data = Path(__file__).resolve().parents[3] / "nltk_data"
    wordnet = data / "corpora" / "wordnet"
    if wordnet.is_dir():
        os.environ.setdefault("NLTK_DATA", str(data))
        os.environ.setdefault(ENV_VAR, str(wordnet))


