"""Wheels the scoring program carries for what the worker's image lacks.

The scoring program runs on the stock image (``reteco.codabench.program.image``) and may have no network
(the worker's operator decides: docs/codabench_judge.md, "The network"), so
``scoring_program/vendor/`` holds the reteco package and the unpacked wheels of every runtime
dependency the image does not provide; ``score.py`` puts that folder first on ``sys.path``.

Two sources, one result:

- ``pip`` (``make bundle``): ``pip download --only-binary=:all:`` for the target Python and the
  image's platform, resolved against the image's own pins (so a wheel that needs a newer numpy
  than the image's is refused at build time, not on the platform). Downloads are cached under
  ``build/wheels/`` so a rebuild works offline.
- ``environment`` (the tests, and anyone building for the interpreter they run on): copies the
  installed distributions from the running environment. Only valid when the target Python is
  the running one.

Which dependencies: ``[project.dependencies]`` of pyproject.toml (plus an optional ``scoring``
extra when the project defines one), less ``EXCLUDED`` and less what the image provides; a
bundle in which a phase judges (``reteco bundle --judge-config``) keeps openai, which the judge
calls from the scoring program (``excluded(judge=True)``). ``VENDOR.json`` beside them records
what was vendored, for which Python, from which source, and what was left out and why.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

from reteco.codabench.program import image
from reteco.problems import InputError

SOURCES = ("pip", "environment")
VENDOR_MANIFEST = "VENDOR.json"

# Runtime dependencies the scoring program never imports: leaving them out keeps the bundle small.
EXCLUDED = {
    "openai": "no phase judges in the scoring program: the LLM judge runs on the organizers' side (`reteco judge`)",
    "krippendorff": "judge-human agreement is computed on the organizers' side (`reteco agreement`)",
    "matplotlib": "the leaderboard plots are drawn on the organizers' side (`reteco leaderboard`)",
}

# Caps applied on top of the image's pins, each with its reason.
CAPS = {
    "pyarrow": ("<26", "pyarrow 26 and later require numpy 2; the image has numpy 1.26"),
}

# Pure-Python dependencies published on PyPI as source only: built once into a py3-none-any
# wheel (valid on any Python and platform) in the cache, where the resolution then finds it.
PURE_SDISTS = ("rouge-score",)

# Parts of a distribution the scoring program never loads (bundle size). Shell-style patterns
# relative to the vendor folder. The simulated worker in `reteco check-bundle` scores every
# sample submission with what is left, so a needed part pruned by mistake fails the build.
PRUNE = (
    "pyarrow/include", "pyarrow/tests", "pyarrow/src", "pyarrow/includes",
    "pyarrow/*.pyx", "pyarrow/*.pxd", "pyarrow/*.pxi",
    "pyarrow/libarrow_flight.so*", "pyarrow/libarrow_python_flight.so*", "pyarrow/_flight.*",
    "pyarrow/_s3fs.*", "pyarrow/_gcsfs.*", "pyarrow/_azurefs.*", "pyarrow/_hdfs.*",
    "pyarrow/_orc.*", "pyarrow/_dataset_orc.*", "pyarrow/_pyarrow_cpp_tests.*",
    "pyarrow/libarrow_python_parquet_encryption.so*", "pyarrow/_parquet_encryption.*",
    "pyarrow/_dataset_parquet_encryption.*",
    "pyarrow/libarrow_python.so", "pyarrow/libarrow_python.so.*.*.*",  # copies of the .so.N it loads
    "*/__pycache__",
)


# The dependencies of the judge, vendored when a phase judges in the scoring program.
JUDGE_PACKAGES = ("openai",)


def excluded(*, judge: bool = False) -> dict[str, str]:
    """The runtime dependencies left out of the scoring program, with the reason: ``EXCLUDED``,
    less the judge's packages when a phase judges there."""
    return {name: why for name, why in EXCLUDED.items() if not (judge and name in JUDGE_PACKAGES)}


def scoring_requirements(pyproject: Path, *, judge: bool = False) -> list[str]:
    """The scoring program's runtime requirements, read from pyproject.toml (``judge``: with the
    judge's packages)."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    requirements = list(project.get("dependencies", []))
    requirements += project.get("optional-dependencies", {}).get("scoring", [])
    left_out = excluded(judge=judge)
    return [r for r in requirements if _name(r) not in left_out]


#: The package's folder that no copy of reteco for the worker or the participants carries: the
#: organizers' workbench (``reteco.workbench``). The scorer ships alone (docs/development.md).
WORKBENCH = "workbench"
_NOT_SOURCE = shutil.ignore_patterns("__pycache__", "*.pyc", ".DS_Store", ".pytest_cache")


def copy_scorer(package_src: Path, dest: Path) -> None:
    """Copy the reteco package at ``package_src`` to ``dest``: the scorer, without the workbench
    and without bytecode (the scoring program's ``vendor/reteco``, the starting kit's source)."""
    top = Path(package_src).resolve()

    def ignore(folder: str, names: list[str]) -> set[str]:
        left = set(_NOT_SOURCE(folder, names))
        if Path(folder).resolve() == top:
            left.add(WORKBENCH)
        return left

    shutil.copytree(package_src, dest, ignore=ignore)


def vendor(
    dest: Path,
    requirements: list[str],
    *,
    python: str,
    source: str,
    cache: Path,
    package_src: Path,
    left_out: dict[str, str] | None = None,
) -> dict:
    """Fill ``dest`` with the reteco package and the dependencies the image lacks.

    Returns (and writes as ``dest/VENDOR.json``) what was vendored; ``left_out`` (default
    ``EXCLUDED``) is recorded as what was left out and why.
    """
    needed = [r for r in requirements if not image.provides(_name(r))]
    packages, from_image = install(dest, needed, python=python, source=source, cache=cache)
    from_image |= {_name(r) for r in requirements if image.provides(_name(r))}
    copy_scorer(package_src, dest / "reteco")
    pruned = _prune(dest)
    record = {
        "image": image.IMAGE,
        "python": python,
        "source": source,
        "platforms": list(image.PLATFORMS) if source == "pip" else [sys.platform],
        "requirements": needed,
        "packages": dict(sorted(packages.items())),
        # What the program imports from the image: the simulated worker installs exactly these.
        "from_image": sorted(from_image),
        "excluded": EXCLUDED if left_out is None else left_out,
        "pruned": pruned,
    }
    (dest / VENDOR_MANIFEST).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


def install(
    dest: Path, requirements: list[str], *, python: str, source: str, cache: Path
) -> tuple[dict[str, str], set[str]]:
    """Unpack ``requirements`` and their dependencies, less what the image has, into ``dest``.

    Returns the packages unpacked (name -> version) and the names left to the image.
    """
    if source not in SOURCES:
        raise ValueError(f"unknown wheel source {source!r}; choose one of {SOURCES}")
    dest.mkdir(parents=True, exist_ok=True)
    if source == "environment":
        _require_running_python(python)
        return _copy_environment(requirements, dest)
    packages: dict[str, str] = {}
    from_image: set[str] = set()
    for wheel in pip_download(requirements, python=python, cache=cache / f"cp{python.replace('.', '')}-vendor", pins=True):
        name, version = _wheel_name_version(wheel)
        if image.provides(name):
            from_image.add(name)  # resolved against the image's pin: the image has this very version
            continue
        _extract_wheel(wheel, dest)
        packages[name] = version
    return packages, from_image


def image_site(python: str, source: str, cache: Path, packages: tuple[str, ...] = image.SIMULATED) -> Path:
    """A folder holding the image's packages the scoring program could import (numpy, pandas,
    pyyaml and their dependencies), for the simulated worker. Built once, then reused."""
    digest = hashlib.sha256(" ".join(sorted(packages)).encode()).hexdigest()[:12]
    site = cache / f"image-site-{python}-{source}-{digest}"
    done = site / ".complete"
    if done.exists():
        return site
    if site.exists():
        shutil.rmtree(site)
    site.mkdir(parents=True)
    if source == "environment":
        _require_running_python(python)
        _link_environment(list(packages), site)
    else:
        for wheel in pip_download(
            list(packages), python=python, cache=cache / f"cp{python.replace('.', '')}-image", pins=True
        ):
            _extract_wheel(wheel, site)
    done.write_text("ok\n")
    return site


def pip_download(requirements: list[str], *, python: str, cache: Path, pins: bool) -> list[Path]:
    """Wheels for ``requirements`` and their dependencies, for ``python`` on the image's platform.

    Tries the cache alone first (no network), then PyPI. With ``pins`` the image's versions and
    ``CAPS`` constrain the resolution.
    """
    cache.mkdir(parents=True, exist_ok=True)
    for requirement in requirements:
        if _name(requirement) in PURE_SDISTS:
            _build_pure_wheel(requirement, cache)
    constraints = cache / "constraints.txt"
    lines = [f"{name}{spec}" for name, (spec, _) in CAPS.items()]
    if pins and python == image.PYTHON:
        lines += [f"{name}=={version}" for name, version in image.PINNED.items()]
    constraints.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tag = python.replace(".", "")
    command = [
        sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--quiet",
        "--only-binary=:all:", "--python-version", python, "--implementation", "cp", "--abi", f"cp{tag}",
        *[arg for p in image.PLATFORMS for arg in ("--platform", p)],
        "-c", str(constraints), *requirements,
    ]
    # pip download leaves in -d exactly the resolved set; a fresh folder per call tells it apart
    # from older files of the cache, which --find-links still offers so nothing is fetched twice.
    with tempfile.TemporaryDirectory(dir=cache) as work:
        attempt = command + ["-d", work, "--find-links", str(cache)]
        offline = subprocess.run(attempt + ["--no-index"], capture_output=True, text=True, check=False)
        if offline.returncode != 0:
            online = subprocess.run(attempt, capture_output=True, text=True, check=False)
            if online.returncode != 0:
                raise InputError(
                    f"pip could not download wheels for Python {python} ({' '.join(requirements)}):\n"
                    + (online.stderr.strip() or online.stdout.strip())
                )
        wheels = []
        for path in sorted(Path(work).iterdir()):
            kept = cache / path.name
            if not kept.exists():
                shutil.move(str(path), kept)
            wheels.append(kept)
    return wheels


def _build_pure_wheel(requirement: str, cache: Path) -> None:
    name = _name(requirement).replace("-", "_")
    if any(cache.glob(f"{name}-*-py3-none-any.whl")) or any(cache.glob(f"{name}-*-py2.py3-none-any.whl")):
        return
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "--quiet", "--no-deps",
         "-w", str(cache), requirement],
        capture_output=True, text=True, check=False,
    )
    built = [w for w in cache.glob(f"{name}-*.whl") if w.name.endswith("-none-any.whl")]
    if done.returncode != 0 or not built:
        raise InputError(f"could not build a pure-Python wheel of {requirement}:\n{done.stderr.strip()[-2000:]}")


def _require_running_python(python: str) -> None:
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    if python != running:
        raise InputError(
            f"the environment source copies installed packages, which are built for Python {running}, "
            f"not {python}; use --wheels pip for another Python"
        )


def _name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if not match:
        raise ValueError(f"cannot read requirement {requirement!r}")
    return image.normalize(match.group(1))


def _wheel_name_version(wheel: Path) -> tuple[str, str]:
    parts = wheel.name.split("-")
    return image.normalize(parts[0]), parts[1]


def _extract_wheel(wheel: Path, dest: Path) -> None:
    """Install a wheel by unpacking it (what pip does, minus scripts and RECORD checks)."""
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            name = member.filename
            if name.endswith("/"):
                continue
            parts = name.split("/")
            if parts[0].endswith(".data"):
                if len(parts) > 2 and parts[1] in ("purelib", "platlib"):
                    name = "/".join(parts[2:])
                else:
                    continue  # scripts, headers, data: not importable
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, open(target, "wb") as sink:
                shutil.copyfileobj(source, sink)


def _distributions(requirements: list[str], skip_image: bool) -> tuple[list[metadata.Distribution], set[str]]:
    """Installed distributions of ``requirements`` and their dependencies (markers evaluated),
    and (with ``skip_image``) the names left out because the image has them."""
    found: dict[str, metadata.Distribution] = {}
    skipped: set[str] = set()
    pending = list(requirements)
    while pending:
        name = _name(pending.pop())
        if name in found or name in skipped:
            continue
        if skip_image and image.provides(name):
            skipped.add(name)
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise InputError(f"{name} is required but is not installed here") from None
        found[name] = dist
        pending.extend(_dependencies(dist))
    return list(found.values()), skipped


def _link_environment(requirements: list[str], dest: Path) -> None:
    """Symbolic links to the installed top-level entries of ``requirements`` (and dependencies):
    a folder where exactly those packages are importable, without copying them."""
    for dist in _distributions(requirements, skip_image=False)[0]:
        tops = {path.parts[0] for path in dist.files or () if path.parts[0] != ".."}
        for top in sorted(tops):
            source = Path(dist.locate_file(top))
            link = dest / top
            if source.exists() and not os.path.lexists(link):
                link.symlink_to(source)


def _copy_environment(requirements: list[str], dest: Path) -> tuple[dict[str, str], set[str]]:
    """Copy installed distributions (and their dependencies) into ``dest``, less the image's."""
    copied: dict[str, str] = {}
    dists, skipped = _distributions(requirements, skip_image=True)
    for dist in dists:
        for path in dist.files or ():
            if path.parts[0] == ".." or path.suffix == ".pyc":
                continue  # scripts outside site-packages; bytecode is rebuilt on import
            source = Path(dist.locate_file(path))
            if source.is_file():
                target = dest / path
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
        copied[image.normalize(dist.metadata["Name"])] = dist.version
    return copied, skipped


def _dependencies(dist: metadata.Distribution) -> list[str]:
    try:
        from packaging.requirements import Requirement
    except ImportError:  # pip always vendors packaging
        from pip._vendor.packaging.requirements import Requirement  # type: ignore
    out = []
    for text in dist.requires or ():
        requirement = Requirement(text)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            out.append(requirement.name)
    return out


def _prune(dest: Path) -> list[str]:
    removed = []
    for path in sorted(dest.rglob("*"), key=lambda p: len(p.parts)):
        if not os.path.lexists(path):
            continue
        relative = path.relative_to(dest).as_posix()
        if any(fnmatch.fnmatch(relative, pattern) for pattern in PRUNE):
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
            if "__pycache__" not in relative:
                removed.append(relative)
    return removed
