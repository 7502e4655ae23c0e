"""Every bad input exits 1 naming the file (and line); exit codes mean one thing each
(pages/messages.md); participants' values in messages are short and escaped; submissions from pipes."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.paths import REPO_ROOT
from support.tiny_track2 import write_tiny_reference

from reteco import __version__
from reteco.codabench.program import scoring_program as codabench
from reteco.commands import main
from reteco.formats.qrels import read_qrels, read_stance
from reteco.formats.submission import open_submission
from reteco.problems import EXIT_INPUT, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, MAX_FILE_NAME, InputError, printable

BIG = "9" * 5000  # int() refuses more than 4,300 digits with ValueError
INTERNAL = f"internal error in reteco {__version__} (RuntimeError); please report it to the organizers"
ANSWERS_HINT = 'each line must be one JSON object: {"turn_id": "<conversation id>_turn_<n>", "answer": "..."}'


@pytest.fixture
def ref_2a(tmp_path):
    return write_tiny_reference(tmp_path / "ref" / "2a", "2a")


@pytest.fixture
def ref_2b(tmp_path):
    return write_tiny_reference(tmp_path / "ref" / "2b", "2b")


@pytest.fixture
def ref_2c(tmp_path):
    return write_tiny_reference(tmp_path / "ref" / "2c", "2c")


def answer(turn_id: str, text: str = "an answer") -> str:
    return json.dumps({"turn_id": turn_id, "answer": text}) + "\n"


def run_cli(capsys, *args) -> tuple[int, str]:
    code = main([str(a) for a in args])
    return code, capsys.readouterr().err


def reteco(*args, stdin=None, input=None, env=None, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reteco", *map(str, args)],
        stdin=stdin, input=input, capture_output=True, timeout=timeout, check=False, env=env,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# 1. Exit codes


def test_a_wrong_command_line_exits_2_and_help_exits_0(capsys):
    code, err = run_cli(capsys, "score", "--ref", "x")
    assert code == EXIT_USAGE == 2
    assert "reteco score: error: give the submission to score: --res SUBMISSION" in err
    code, err = run_cli(capsys, "score")
    assert code == EXIT_USAGE and "error: give the submission" in err
    code, err = run_cli(capsys, "prepare", "--release", "x")
    assert code == EXIT_USAGE and "the following arguments are required: --split, --out" in err
    assert run_cli(capsys, "--version")[0] == EXIT_OK


def _explode(*args, **kwargs):
    raise RuntimeError("gold document d7 of topic q1")  # text that must never reach the log


def test_an_internal_error_exits_3_with_one_line_and_no_traceback(capsys, monkeypatch, ref_2a, tmp_path):
    monkeypatch.delenv("RETECO_DEBUG", raising=False)
    monkeypatch.setattr("reteco.scoring.submission.score_submission", _explode)
    run = tmp_path / "run.txt"
    run.write_text("biology/2_turn_1 Q0 b1 1 1.0 t\n")
    code, err = run_cli(capsys, "score", "--ref", ref_2a.root, "--res", run, "--out", tmp_path / "out")
    assert code == EXIT_INTERNAL == 3
    assert err.splitlines() == [INTERNAL]

    monkeypatch.setenv("RETECO_DEBUG", "1")
    code, err = run_cli(capsys, "score", "--ref", ref_2a.root, "--res", run, "--out", tmp_path / "out")
    assert code == EXIT_INTERNAL and "Traceback" in err and err.rstrip().endswith(INTERNAL)


def _program_input(tmp_path: Path, ref) -> Path:
    shutil.copytree(ref.root, tmp_path / "input" / "ref")
    (tmp_path / "input" / "res").mkdir()
    return tmp_path / "input"


def test_the_scoring_program_uses_the_same_codes_and_the_same_internal_error_line(capsys, monkeypatch, ref_2a, tmp_path):
    monkeypatch.delenv("RETECO_DEBUG", raising=False)
    assert codabench.main(["only-one"]) == EXIT_USAGE
    input_dir = _program_input(tmp_path, ref_2a)
    (input_dir / "res" / "run.txt").write_text("biology/2_turn_1 Q0 b1 1 1.0 t\n")
    monkeypatch.setattr("reteco.scoring.submission.score_submission", _explode)
    capsys.readouterr()
    assert codabench.main([str(input_dir), str(tmp_path / "out")]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.splitlines() == [INTERNAL] and "d7" not in err
    assert not (tmp_path / "out" / "scores.json").exists()


def test_a_missing_required_score_is_an_internal_error(capsys, monkeypatch, ref_2a, tmp_path):
    input_dir = _program_input(tmp_path, ref_2a)
    (input_dir / "res" / "run.txt").write_text("biology/2_turn_1 Q0 b1 1 1.0 t\n")
    from reteco.outputs import results

    real = results.absent_scores

    def lose_mrr(subtrack, scores, details, **kwargs):
        return real(subtrack, {k: v for k, v in scores.items() if k != "mrr"}, details, **kwargs)

    monkeypatch.setattr(results, "absent_scores", lose_mrr)
    assert codabench.main([str(input_dir), str(tmp_path / "out")]) == EXIT_INTERNAL
    err = capsys.readouterr().err.splitlines()
    assert err == ["reteco: sub-track 2a scored without mrr", INTERNAL.replace("RuntimeError", "MissingScoreError")]
    assert not (tmp_path / "out" / "scores.json").exists()  # written last, so never on a failure


def ingestion(tmp_path: Path, task: dict | None, files: dict[str, str]) -> subprocess.CompletedProcess:
    data, submission = tmp_path / "data", tmp_path / "submission"
    data.mkdir(parents=True)
    submission.mkdir()
    if task is not None:
        (data / "task.json").write_text(json.dumps(task))
    for name, text in files.items():
        (submission / name).write_text(text)
    program = REPO_ROOT / "ingestion_program" / "ingestion.py"
    return subprocess.run([sys.executable, str(program), str(data), str(tmp_path / "out"), str(submission)],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


def test_the_ingestion_program_uses_the_same_codes(tmp_path):
    program = REPO_ROOT / "ingestion_program" / "ingestion.py"
    usage = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, timeout=120, check=False)
    assert usage.returncode == EXIT_USAGE
    no_task = ingestion(tmp_path / "a", None, {"run.txt": "x"})  # the phase's data is broken: not the participant
    assert no_task.returncode == EXIT_INTERNAL, no_task.stderr
    assert no_task.stderr.splitlines() == [INTERNAL.replace("RuntimeError", "FileNotFoundError")]
    failing = ingestion(tmp_path / "b", {"subtrack": "2a", "split": "dev"}, {"submission.py": "def run(*a):\n    1 / 0\n"})
    assert failing.returncode == EXIT_INPUT and "ZeroDivisionError" in failing.stderr
    results = ingestion(tmp_path / "c", {"subtrack": "2a", "split": "dev"}, {"run.txt": "x"})
    assert results.returncode == EXIT_OK and (tmp_path / "c" / "out" / "run.txt").read_text() == "x"


# ---------------------------------------------------------------------------------------------
# 2. Every problem with an input exits 1 naming the file


@pytest.mark.parametrize("topic", [f"biology/2_turn_{BIG}", f"biology/2#turn{BIG}", f"2#turn{BIG}"])
def test_a_run_topic_with_a_5000_digit_turn_is_no_turn(capsys, ref_2a, tmp_path, topic):
    alone = tmp_path / "alone.txt"
    alone.write_text(f"{topic} Q0 b1 1 1.0 t\n")
    code, err = run_cli(capsys, "validate", "--ref", ref_2a.root, alone)
    assert code == EXIT_INPUT, err
    assert err.startswith("alone.txt: error: none of the run's 1 topics is a topic of sub-track 2a")
    with_others = tmp_path / "run.txt"
    with_others.write_text(f"{topic} Q0 b1 1 1.0 t\nbiology/2_turn_1 Q0 b1 1 1.0 t\n")
    code, err = run_cli(capsys, "validate", "--ref", ref_2a.root, with_others)
    assert code == EXIT_OK and "run.txt: warning: 1 topics are not in the reference and were ignored" in err


@pytest.mark.parametrize("turn_id", [f"biology/2#turn{BIG}", f"biology/2_turn_{BIG}"])
def test_an_answers_turn_id_with_a_5000_digit_turn_is_no_turn(capsys, ref_2b, tmp_path, turn_id):
    answers = tmp_path / "answers.jsonl"
    answers.write_text(answer(turn_id))
    code, err = run_cli(capsys, "validate", "--ref", ref_2b.root, answers)
    assert code == EXIT_INPUT
    assert err.startswith("answers.jsonl: error: none of the 1 answers' turn ids is a turn of sub-track 2b")
    assert "(5014 characters in all)" in err or "(5015 characters in all)" in err
    assert len(err) < 500


@pytest.mark.parametrize(
    "line",
    [
        '{"turn_id": "biology/2_turn_1", "answer": ' + BIG + "}",
        '{"turn_id": "biology/2_turn_1", "answer": "a", "score": -' + BIG + "}",
        '{"turn_id": "biology/2_turn_1", "answer": "a", "meta": {"sources": [1, ' + BIG + "]}}",
    ],
)
def test_a_5000_digit_json_integer_anywhere_in_an_answers_line_is_an_error_naming_the_line(capsys, ref_2b, tmp_path, line):
    answers = tmp_path / "answers.jsonl"
    answers.write_text(answer("biology/2_turn_2") + line + "\n")
    code, err = run_cli(capsys, "score", "--ref", ref_2b.root, "--res", answers, "--out", tmp_path / "out")
    assert code == EXIT_INPUT
    assert err.splitlines() == [f"answers.jsonl:2: error: a JSON number of 5,000 digits, too long to read; {ANSWERS_HINT}"]
    assert not (tmp_path / "out").exists()


def test_out_must_be_a_folder_and_is_checked_before_scoring(capsys, monkeypatch, ref_2a, tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("biology/2_turn_1 Q0 b1 1 1.0 t\n")
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    monkeypatch.setattr("reteco.scoring.submission.score_submission", _explode)  # never reached
    code, err = run_cli(capsys, "score", "--ref", ref_2a.root, "--res", run, "--out", afile)
    assert code == EXIT_INPUT
    assert err.splitlines() == [f"{afile}: error: --out exists and is not a folder; give a folder (it is created if needed)"]
    code, err = run_cli(capsys, "score", "--ref", ref_2a.root, "--res", run, "--out", afile / "sub" / "out")
    assert code == EXIT_INPUT
    assert err.splitlines() == [f"{afile / 'sub' / 'out'}: error: --out cannot be created: {afile} exists and is not a folder"]
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")  # mkdir would fail after scoring (File exists)
    code, err = run_cli(capsys, "score", "--ref", ref_2a.root, "--res", run, "--out", dangling)
    assert (code, err.splitlines()) == (EXIT_INPUT, [f"{dangling}: error: --out exists and is not a folder; give a folder (it is created if needed)"])
    assert afile.read_text() == "keep me"


def test_out_that_cannot_be_written_exits_1_naming_it(capsys, ref_2a, tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("biology/2_turn_1 Q0 b1 1 1.0 t\n")
    (tmp_path / "out" / "details.json").mkdir(parents=True)  # a folder where the file goes
    code, err = run_cli(capsys, "score", "--ref", ref_2a.root, "--res", run, "--out", tmp_path / "out")
    assert code == EXIT_INPUT
    assert err.splitlines()[-1] == f"{tmp_path / 'out' / 'details.json'}: error: cannot write the results here (Is a directory)"
    assert not (tmp_path / "out" / "scores.json").exists()


@pytest.fixture
def factir_run(tmp_path) -> Path:
    run = tmp_path / "run.txt"
    run.write_text("c1 Q0 a 1 1.0 t\n")
    return run


def test_a_missing_qrels_or_stance_file_exits_1_naming_it(capsys, tmp_path, factir_run):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("c1 0 a 1\n")
    score = ("score", "--benchmark", "factir", "--res", factir_run, "--out", tmp_path / "out")
    code, err = run_cli(capsys, *score, "--qrels", tmp_path / "nope.txt")
    assert (code, err.splitlines()) == (EXIT_INPUT, [f"{tmp_path / 'nope.txt'}: error: the qrels file cannot be read (No such file or directory)"])
    code, err = run_cli(capsys, *score, "--qrels", qrels, "--stance", tmp_path / "nope.tsv")
    assert (code, err.splitlines()) == (EXIT_INPUT, [f"{tmp_path / 'nope.tsv'}: error: the stance file cannot be read (No such file or directory)"])
    code, err = run_cli(capsys, *score, "--qrels", tmp_path)
    assert (code, err.splitlines()) == (EXIT_INPUT, [f"{tmp_path}: error: is a folder; give the qrels file"])


@pytest.mark.parametrize(
    "content, message",
    [
        (b"c1 0 a 1\nc1 0 b\xff 1\n", "q.txt:2: error: the line is not valid UTF-8; save the qrels file as UTF-8 text"),
        (b"c1 0 a 1\nc1 0 b " + BIG.encode() + b"\n",
         f"q.txt:2: error: relevance '{'9' * 80}...' (5000 characters in all) is not an integer >= 0"),
        ("c1 0 a \u0663\n".encode(), "q.txt:1: error: relevance '\u0663' is not an integer >= 0"),  # int() read it as 3
        (b"c1 0 a 1_0\n", "q.txt:1: error: relevance '1_0' is not an integer >= 0"),
        (b"c1 0 a 99999999999999999999\n", "q.txt:1: error: relevance '99999999999999999999' is not an integer >= 0"),
        (b"c1 0 a hi\x1b[2J\n", "q.txt:1: error: relevance 'hi\\x1b[2J' is not an integer >= 0"),
        (b'{"c1": {"a": ' + BIG.encode() + b"}}", "q.txt: error: topic 'c1', document 'a': relevance must be an integer >= 0"),
        (b'{"c1": {"a": 1}', "q.txt:1: error: not valid JSON: Expecting ',' delimiter (column 16)"),
        (b'{"c\\u001b": 3}', "q.txt: error: topic 'c\\x1b' must map doc ids to relevance levels"),
    ],
)  # fmt: skip
def test_a_malformed_qrels_file_exits_1_naming_the_line(capsys, tmp_path, factir_run, content, message):
    qrels = tmp_path / "q.txt"
    qrels.write_bytes(content)
    code, err = run_cli(capsys, "score", "--benchmark", "factir", "--qrels", qrels, "--res", factir_run, "--out", tmp_path / "o")
    assert (code, err.splitlines()) == (EXIT_INPUT, [message])


def test_a_malformed_stance_file_exits_1_naming_the_line(capsys, tmp_path, factir_run):
    qrels, stance = tmp_path / "q.txt", tmp_path / "s.tsv"
    qrels.write_text("c1 0 a 1\n")
    stance.write_bytes(b"c1 a Supports\nc1 b Ref\xe9tes\n")
    code, err = run_cli(capsys, "score", "--benchmark", "factir", "--qrels", qrels, "--stance", stance,
                        "--res", factir_run, "--out", tmp_path / "o")  # fmt: skip
    assert (code, err.splitlines()) == (EXIT_INPUT, ["s.tsv:2: error: the line is not valid UTF-8; save the stance file as UTF-8 text"])
    stance.write_text("c1 a Supports\nc1 b\n")
    with pytest.raises(InputError, match="expected 3 columns"):
        read_stance(stance)
    assert read_qrels(qrels)[0].relevance == 1


def test_the_scoring_program_writes_its_page_on_a_refused_2b_submission(capsys, ref_2b, tmp_path):
    input_dir = _program_input(tmp_path, ref_2b)
    (input_dir / "res" / "answers.jsonl").write_text(answer("biology/2_turn_1") + '{"turn_id": "biology/2_turn_2", "answer": ' + BIG + "}\n")
    out = tmp_path / "out"
    assert codabench.main([str(input_dir), str(out)]) == EXIT_INPUT
    err = capsys.readouterr().err
    line = "answers.jsonl:2: error: a JSON number of 5,000 digits, too long to read"
    assert line in err
    page = (out / "detailed_results.html").read_text()
    assert "could not be scored" in page and line in page
    assert sorted(p.name for p in out.iterdir()) == ["detailed_results.html"]


def test_a_symbolic_link_loop_or_an_overlong_path_exits_1_naming_it(capsys, ref_2a, tmp_path):
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "run.txt").write_text("biology/2_turn_1 Q0 b1 1 1.0 t\n")
    (folder / "loop").symlink_to("loop")  # resolve() raised RuntimeError
    code, err = run_cli(capsys, "validate", "--ref", ref_2a.root, folder)
    assert (code, err.splitlines()) == (EXIT_INPUT, ["loop: error: a symbolic link that leads to itself (a loop); submit the file itself"])
    long = tmp_path / ("x" * 300)  # is_dir() raised OSError (file name too long)
    code, err = run_cli(capsys, "validate", "--ref", ref_2a.root, long)
    shown = printable(str(long), MAX_FILE_NAME)  # Problem lines cut file names at 200 characters
    assert (code, err.splitlines()) == (EXIT_INPUT, [f"{shown}: error: cannot be read (File name too long)"])


# ---------------------------------------------------------------------------------------------
# 3. Participants' values in messages: at most ~80 characters, control characters escaped


def test_answers_messages_quote_turn_ids_and_field_names_short_and_escaped(ref_2b):
    huge = "\x1b[31m" + "x" * 10_000_000 + "\x00"
    data = (
        json.dumps({"turn_id": huge, "answer": "  "}) + "\n"
        + '{"turn_id": "biology/2_turn_1", "answer": "a", "\\u001b]0;owned\\u0007": 1, "\\u001b]0;owned\\u0007": 2}\n'
        + json.dumps({"turn_id": "biology/2_turn_1\x00", "answer": "a"}) + "\n"
    ).encode()  # fmt: skip
    with pytest.raises(InputError) as caught:
        read_answers_of(data, ref_2b)
    lines = caught.value.problems.lines()
    assert lines[0] == (
        "answers.jsonl:1: error: \"answer\" is empty for turn '\\x1b[31m" + "x" * 75 + "...' (10000006 characters in all); "
        "every answer must hold text"
    )
    assert lines[1] == "answers.jsonl:2: error: the field '\\x1b]0;owned\\x07' appears twice in the object; give it once"
    # A NUL makes it another id: no turn; with nothing else accepted, the file is refused.
    assert lines == lines[:2]
    assert all("\x1b" not in line and "\x00" not in line for line in lines)


def read_answers_of(data: bytes, ref):
    from reteco.formats.answers import read_answers

    return read_answers(data, "answers.jsonl", ref)


def test_answers_warnings_quote_unknown_ids_and_extra_field_names(ref_2b):
    from reteco.formats.answers import read_answers
    from reteco.problems import Problems

    problems = Problems()
    data = (answer("biology/2_turn_1") + json.dumps({"turn_id": "biology/\x1b[2J" + "y" * 500, "answer": "a", "\x07x": 1}) + "\n").encode()
    read_answers(data, "answers.jsonl", ref_2b, problems)
    unknown, extra = problems.lines()[:2]
    assert unknown == (
        "answers.jsonl: warning: 1 answers have a turn id that is not a turn of the reference and were ignored, e.g. "
        "'biology/\\x1b[2J" + "y" * 68 + "...' (512 characters in all) (line 2)"
    )
    assert extra == ('answers.jsonl: warning: 1 lines have fields other than "turn_id" and "answer" '
                     "(e.g. '\\x07x' on line 2); they were ignored")  # fmt: skip


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_submission_messages_quote_member_names_short_and_escaped(tmp_path):
    unsafe = _zip(tmp_path / "a.zip", {"../\x1b[2J" + "z" * 300: b"x"})
    with pytest.raises(InputError) as caught:
        open_submission(unsafe)
    (line,) = caught.value.problems.lines()
    assert line == ("a.zip: error: member '../\\x1b[2J" + "z" * 73 + "...' (307 characters in all) has an unsafe path "
                    "(absolute, a drive letter, or '..'); zip the files with paths relative to the zip")  # fmt: skip
    docs = _zip(tmp_path / "b.zip", {"README\x1b.md": b"x", "notes.md": b"y"})
    with pytest.raises(InputError) as caught:
        open_submission(docs).find("run")
    assert caught.value.problems.lines() == [
        "b.zip: error: no run file found; files in the submission: 'README\\x1b.md', 'notes.md'; add the run file, named run.txt"
    ]


# ---------------------------------------------------------------------------------------------
# 4. Submissions from pipes and devices


RUN = b"biology/2_turn_1 Q0 b1 1 1.0 t\nbiology/2_turn_2 Q0 b2 1 0.5 t\nearth_science/2_turn_1 Q0 e1 1 1.0 t\n"
VALID = b"stdin: valid for sub-track 2a: 3 lines, 3 of 3 reference topics ranked"


@pytest.mark.parametrize("where", ["-", "/dev/stdin"])
@pytest.mark.parametrize("packing", ["plain", "gzip", "zip"])
def test_a_run_from_a_pipe_is_read_once_as_a_file(ref_2a, tmp_path, where, packing):
    if where == "/dev/stdin" and not Path("/dev/stdin").exists():
        pytest.skip("no /dev/stdin on this system")
    data = {"plain": RUN, "gzip": gzip.compress(RUN)}.get(packing)
    if packing == "zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("team/run.txt", RUN)
        data = buffer.getvalue()
    done = reteco("validate", "--ref", ref_2a.root, where, input=data)  # input= gives the child a pipe
    assert done.returncode == 0, done.stderr
    # A zip's members are named as written in it.
    assert done.stdout.startswith(VALID if packing != "zip" else VALID.replace(b"stdin:", b"stdin:team/run.txt:"))


@pytest.mark.slow
def test_a_run_from_a_pipe_is_scored_like_the_file(ref_2a, tmp_path):
    run = tmp_path / "run.txt"
    run.write_bytes(RUN)
    from_file = reteco("score", "--ref", ref_2a.root, "--res", run, "--out", tmp_path / "a")
    with open(run, "rb") as handle:
        cat = subprocess.Popen(["cat"], stdin=handle, stdout=subprocess.PIPE)
        from_pipe = reteco("score", "--ref", ref_2a.root, "--res", "-", "--out", tmp_path / "b", stdin=cat.stdout)
        cat.stdout.close()
        cat.wait()
    assert from_file.returncode == from_pipe.returncode == 0, from_pipe.stderr
    assert (tmp_path / "a" / "scores.json").read_text() == (tmp_path / "b" / "scores.json").read_text()
    # Errors name the lines of what came in.
    bad = reteco("validate", "--ref", ref_2a.root, "-", input=RUN + b"biology/2_turn_1 Q0 b3 x 0.1 t\n")
    assert bad.returncode == 1 and bad.stderr.decode().splitlines() == ["stdin:4: error: rank 'x' is not an integer"]


def test_answers_from_a_pipe_and_2c_needs_a_zip(ref_2b, ref_2c):
    answers = (answer("biology/2_turn_1") + answer("earth_science/2_turn_1")).encode()
    done = reteco("validate", "--ref", ref_2b.root, "-", input=answers)
    assert done.returncode == 0, done.stderr
    assert b"stdin: valid for sub-track 2b: 2 answers read" in done.stdout
    done = reteco("validate", "--ref", ref_2c.root, "-", input=RUN)
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == [
        "stdin: error: standard input holds a single file, read as the run; the answers must be in the submission "
        "too: pipe in a zip holding both files, or give the path of a zip or folder"
    ]


def test_stdin_over_the_size_limit_is_refused():
    from reteco.formats import submission

    read, write = os.pipe()
    os.write(write, b"x" * 100)
    os.close(write)
    saved = os.dup(0)
    os.dup2(read, 0)
    try:
        with pytest.raises(InputError) as caught:
            submission.open_submission(Path("-"), max_bytes=99)
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read)
    assert caught.value.problems.lines()[0].startswith("stdin: error: larger than the limit of 99 bytes")


@pytest.mark.slow
def test_a_named_pipe_or_a_device_is_refused_at_once(ref_2a, tmp_path):
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a named pipe"), (Path("/dev/zero"), "a device"), (Path("/dev/null"), "a device")):
        if not path.exists():
            continue
        # Before, reading the pipe waited forever for a writer (the timeout would fail the test).
        # Standard input is a pipe here: /dev/null as standard input would be read as it.
        done = reteco("validate", "--ref", ref_2a.root, path, input=b"", timeout=60)
        assert done.returncode == EXIT_INPUT
        assert done.stderr.decode().splitlines() == [
            f"{path}: error: {kind}, not a regular file: it is not read (it could block or never end); give the "
            "path of the submission file itself, or - to read it from standard input"
        ]
        done = reteco("score", "--ref", ref_2a.root, "--res", path, "--out", tmp_path / "o", input=b"", timeout=60)
        assert done.returncode == EXIT_INPUT and f"{kind}, not a regular file" in done.stderr.decode()


# ---------------------------------------------------------------------------------------------
# 6. A duplicate document goes after its first occurrence in the decided order


@pytest.mark.parametrize(
    "lines",
    [
        # The Evaluation page's example: the 0.5 line comes first in the file but is the duplicate.
        ["biology/2_turn_1 Q0 b1 2 0.5 t", "biology/2_turn_1 Q0 b3 3 0.7 t", "biology/2_turn_1 Q0 b1 1 0.9 t"],
        # Already in the decided order (the grouped path): the same ranking.
        ["biology/2_turn_1 Q0 b1 1 0.9 t", "biology/2_turn_1 Q0 b3 3 0.7 t", "biology/2_turn_1 Q0 b1 2 0.5 t"],
        # Equal scores: the smaller rank decides which occurrence is first, not the line.
        ["biology/2_turn_1 Q0 b1 3 0.9 t", "biology/2_turn_1 Q0 b3 2 0.9 t", "biology/2_turn_1 Q0 b1 1 0.9 t"],
    ],
)
def test_the_first_occurrence_is_the_first_in_the_decided_order(ref_2a, tmp_path, lines):
    from reteco.formats.trec_run import read_trec_run
    from reteco.problems import Problems
    from reteco.scoring.retrieval import score_run
    from reteco.scoring.rules import apply_rules

    data = ("\n".join(lines) + "\n").encode()
    ranked = apply_rules(ref_2a, read_trec_run(data, "run.txt"), Problems())
    assert ranked.top_documents(0, 10) == ["b1", "b3"] and ranked.counts["duplicate_doc_ids"] == 1
    # b1 (the gold document of biology/2_turn_1) keeps rank 1: nDCG@10 1 for the turn, not
    # 1/log2(3) as if the file's first b1 line (0.5) had been kept behind b3 (0.7).
    result = score_run(ref_2a, read_trec_run(data, "run.txt"))
    per_unit = {row["unit"]: row for row in result.per_topic["per_unit"]}
    assert per_unit["biology/2_turn_1"]["ndcg_10"] == 1.0
    assert result.scores["mrr"] == pytest.approx(1 / 3, abs=1e-15)  # 1 on one turn of 3, 0 on the others
