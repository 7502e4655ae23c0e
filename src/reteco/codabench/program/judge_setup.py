"""The judge's setup in a phase's reference data: ``judge/`` beside ``reference.json``.

``reteco bundle --judge-config FILE`` writes it into the reference data of the judged phases'
2b and 2c tasks; the scoring program judges where it finds one (``read_judge_setup``). Layout
(format ``reteco-judge-setup/1``)::

    judge/judge.yaml     the judge configuration (``reteco.judge.config``), every setting written
                         out: the endpoint as resolved at build time (``base_url``), the key read
                         from ``api_key_file: api_key``, the call budget ``max_calls_per_run``
    judge/api_key        the API key, read at build time from the config's key source
    judge/prompts/       only for a config with its own ``prompts_dir``: its manifest.json and v<N>/
    judge/manifest.json  format, the sha256 of every file above, the judge's signature, and
                         ``manifest_sha256`` (a sha256 of its own content)

Why the reference data. The scoring container gets no environment but ``PYTHONUNBUFFERED`` and
the operator's proxy variables (``compute_worker.py``, ``create_container``), so a key can only
arrive in a file. Of the scoring container's inputs, only the reference data is neither
downloadable by participants nor seen by their code: the scoring program is downloadable
(``make_programs_available``; ``_tabs.tag`` lists reference data for admins only), and the
worker fetches reference data for the scoring step alone (``_send_to_compute_worker``,
``src/apps/competitions/tasks.py``: ``if is_scoring and task.reference_data``), while a code
submission runs in the prediction step (``ingestion_only_during_scoring`` is never set here).

Verification (``read_judge_setup``): the manifest's own digest, every listed file's sha256, no
unlisted file in the folder, and the signature of the configuration as loaded equal to the one
recorded at build time. Any difference is a ``ReferenceDataError`` (the submission is not
scored, and the log says to tell the organizers), as for any other damaged reference file.
``reference.json`` does not list the folder (its ``files`` are the folder's own top-level data
files): the judge's files are verified by their own manifest, as ``temporal_labels/`` is, so a
judged and an unjudged phase of one split share the reference's fingerprint. No message here
ever quotes the key file.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml

from reteco.formats.file_digest import MANIFEST_DIGEST, manifest_digest, sha256_file
from reteco.formats.reference import TURNS, ReferenceDataError
from reteco.problems import InputError
from reteco.subtracks import SUBTRACK_IDS, SUBTRACKS

JUDGE_DIR = "judge"
JUDGE_CONFIG = "judge.yaml"
KEY_FILE = "api_key"
PROMPTS_DIR = "prompts"
SETUP_MANIFEST = "manifest.json"
SETUP_FORMAT = "reteco-judge-setup/1"
JUDGED_SUBTRACKS = tuple(s for s in SUBTRACK_IDS if SUBTRACKS[s].judged)  # 2b, 2c: the sub-tracks the judge scores
#: The call budget written when the config sets none: twice the judgments of one pass (room
#: for a re-ask or a retry of every judgment), plus the preflight.
BUDGET_PER_JUDGMENT = 2

_HEADER = (
    "# The LLM judge of this phase, written by `reteco bundle --judge-config`: every setting explicit,\n"
    "# the endpoint resolved when the bundle was built, the key in the file api_key beside this one.\n"
    "# Verified against manifest.json: edit the organizers' config and build again instead.\n"
)


@dataclass(frozen=True, repr=False)
class JudgeSetup:
    """A judge configuration and its key, read at build time (``load_for_bundle``)."""

    config: object  # reteco.judge.config.JudgeConfig
    key: str
    source: str  # where the key was read (no secret): for the build's log

    def __repr__(self) -> str:  # the key never goes into a traceback or a log line
        return f"JudgeSetup({self.config!r}, key from {self.source})"


def load_for_bundle(path: Path) -> JudgeSetup:
    """Read the organizers' judge config ``path`` (the file ``reteco judge --config`` reads) and
    its key, now. InputError (file named, key never quoted) when the config cannot be used, has
    no key, or asks for the Batch API (a batch cannot keep the phase's time limit)."""
    from reteco.judge.config import load_judge_config
    from reteco.llm.config import endpoint_available, read_api_key

    config = load_judge_config(Path(path))
    if config.use_batch_api:
        raise InputError("use_batch_api: true cannot be used in the scoring program (a batch cannot keep the phase's "
                         "time limit); set it to false for the bundle", str(path))
    ok, why = endpoint_available(config)
    if not ok:
        raise InputError(f"the judge cannot be given to the scoring program: {why}", str(path))
    key, source = read_api_key(config)
    assert key is not None  # endpoint_available checked it
    return JudgeSetup(config, key, source)


def count_turns(reference_dir: Path) -> int:
    """The reference turns of a 2b/2c reference folder (lines of turns.jsonl)."""
    with open(Path(reference_dir) / TURNS, encoding="utf-8") as handle:
        return sum(1 for line in handle if line.strip())


def call_budget(setup: JudgeSetup, turns: int) -> int:
    """The config's ``max_calls_per_run``, else ``BUDGET_PER_JUDGMENT`` x (turns x the prompt
    version's dimensions) + 1."""
    configured = setup.config.max_calls_per_run
    dimensions = len(setup.config.prompts.dimension_names)
    return configured if configured is not None else BUDGET_PER_JUDGMENT * turns * dimensions + 1


def write_judge_setup(reference_dir: Path, setup: JudgeSetup, *, max_calls: int) -> Path:
    """Write ``judge/`` into a staged reference folder (module docstring); returns the folder."""
    from reteco.judge.prompts import PACKAGED_PROMPTS

    config = setup.config
    folder = Path(reference_dir) / JUDGE_DIR
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    values = _config_values(config)
    values.update(base_url=config.resolved_base_url(), api_key_file=KEY_FILE, max_calls_per_run=max_calls)
    prompts_root = Path(config.prompts.directory).parent
    if prompts_root.resolve() != PACKAGED_PROMPTS.resolve():
        target = folder / PROMPTS_DIR
        target.mkdir()
        shutil.copy(prompts_root / SETUP_MANIFEST, target / SETUP_MANIFEST)
        shutil.copytree(config.prompts.directory, target / config.prompts.directory.name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        values["prompts_dir"] = PROMPTS_DIR
    (folder / JUDGE_CONFIG).write_text(_HEADER + yaml.safe_dump(values, sort_keys=False), encoding="utf-8")
    (folder / KEY_FILE).write_text(setup.key + "\n", encoding="utf-8")
    manifest = {
        "format": SETUP_FORMAT,
        "signature": config.signature,
        "files": {name: sha256_file(folder / name) for name in _files(folder)},
    }
    manifest[MANIFEST_DIGEST] = manifest_digest(manifest)
    (folder / SETUP_MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return folder


def read_judge_setup(reference_dir: Path):
    """The verified judge configuration of a reference folder (a ``JudgeConfig`` whose key is read
    from ``judge/api_key``), or None when it holds no ``judge/``. ReferenceDataError naming the
    file when the folder is damaged (module docstring)."""
    from reteco.judge.config import load_judge_config

    folder = Path(reference_dir) / JUDGE_DIR
    if not folder.exists():
        return None
    where = str(folder / SETUP_MANIFEST)
    damaged = "(the judge's setup in the reference data was changed or damaged); build the bundle again"
    try:
        manifest = json.loads((folder / SETUP_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        raise ReferenceDataError(f"missing or unreadable {damaged}", where) from None
    if not isinstance(manifest, dict) or manifest.get("format") != SETUP_FORMAT or not isinstance(manifest.get("files"), dict):
        raise ReferenceDataError(f"not a {SETUP_FORMAT} manifest {damaged}", where)
    if manifest.get(MANIFEST_DIGEST) != manifest_digest(manifest):
        raise ReferenceDataError(f"does not match the {MANIFEST_DIGEST} it records {damaged}", where)
    listed = manifest["files"]
    present = _files(folder)
    for name in sorted(set(listed) | set(present)):
        path = str(folder / name)
        if name not in present:
            raise ReferenceDataError(f"missing, though {SETUP_MANIFEST} lists it {damaged}", path)
        if name not in listed:
            raise ReferenceDataError(f"not listed in {SETUP_MANIFEST}, so it cannot be verified {damaged}", path)
        if sha256_file(folder / name) != listed[name]:
            raise ReferenceDataError(f"does not match the sha256 recorded in {SETUP_MANIFEST} {damaged}", path)
    try:
        config = load_judge_config(folder / JUDGE_CONFIG)
    except InputError as exc:
        raise ReferenceDataError(exc.problems) from None
    if config.signature != manifest.get("signature"):
        raise ReferenceDataError(f"the judge loaded here is not the one the bundle was built with (signature "
                                 f"{config.signature}, recorded {manifest.get('signature')}) {damaged}", where)
    return config


def _config_values(config) -> dict:
    """Every setting of a judge config as the config file spells it (no prompts, no source)."""
    from reteco.judge.config import JudgeConfig

    values = {}
    for f in dataclasses.fields(JudgeConfig):
        if f.name in ("prompts", "source", "batch_queue_only"):
            continue
        value = getattr(config, f.name)
        values[f.name] = str(value) if isinstance(value, Path) else value
    order = ["prompt_version", "model"]
    return {k: values[k] for k in order} | {k: v for k, v in values.items() if k not in order}


def _files(folder: Path) -> list[str]:
    """Every file below ``folder`` but the manifest, as a relative POSIX path, sorted."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and p.relative_to(folder).as_posix() != SETUP_MANIFEST)
