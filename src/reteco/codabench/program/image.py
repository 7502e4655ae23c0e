"""The compute worker's Docker image: the stock ``codalab/codalab-legacy:py312``.

Decision: the scoring program runs on Codabench's stock image, carrying in
``vendor/`` the wheels of what the image lacks (see ``reteco.workbench.codabench.bundle.vendor``). A custom image
would keep the bundle smaller but must be built, pushed to a public registry and kept alive
by the organizers for years of re-scoring; the stock image is Codabench's own to maintain.

What the image holds comes from its public Dockerfile (codalab/codalab-dockers,
``Dockerfiles/Dockerfile-py312``): ``python:3.12-slim-bookworm`` (glibc 2.36) with these pinned
packages and whatever they pulled in. The pins matter: a vendored wheel must work with the
image's numpy 1.26 (pyarrow 26 and later require numpy 2, so pyarrow is held below 26).
"""

from __future__ import annotations

import re

IMAGE = "codalab/codalab-legacy:py312"
PYTHON = "3.12"  # the image's interpreter: the default target of vendored wheels
REPOSITORY = IMAGE.split(":", 1)[0]
# The tag moves: codalab/codalab-legacy:py312 was rebuilt twice since March 2026, and the worker
# pulls the competition's docker_image before every run (``_get_container_image``, docker-py's
# ``APIClient.pull``, compute_worker.py at c7dbc75), so a rebuilt tag changes the numpy, pandas,
# pyyaml, scipy and joblib that vendor/ relies on, under a bundle already uploaded. A digest does
# not move, and the worker accepts one: ``pull`` splits ``repo@sha256:...`` into the repository
# and the digest (docker-py ``parse_repository_tag``), which the Docker engine pulls as such;
# ``Competition.docker_image`` holds 128 characters (``repo@sha256:`` and 64 hex digits: 94).
# Set DIGEST to the digest of the image you tested the bundle on (``docker pull IMAGE`` then
# ``docker inspect --format '{{index .RepoDigests 0}}' IMAGE``); check-bundle notes a tag.
DIGEST: str | None = None
DIGEST_PATTERN = r"sha256:[0-9a-f]{64}"


def reference(digest: str | None = None) -> str:
    """What competition.yaml's ``docker_image`` names: ``REPOSITORY@DIGEST`` once a digest is
    recorded (``digest`` or ``DIGEST``), else the moving tag ``IMAGE``."""

    digest = digest or DIGEST
    if digest is None:
        return IMAGE
    if not re.fullmatch(DIGEST_PATTERN, digest):
        raise ValueError(f"not an image digest (sha256: and 64 hex digits): {digest!r}")
    return f"{REPOSITORY}@{digest}"

# The image's own pins (pip install in its Dockerfile).
PINNED = {
    "cython": "3.0.12",
    "numpy": "1.26.4",
    "scipy": "1.11.4",
    "scikit-learn": "1.5.1",
    "pandas": "2.2.3",
    "pyyaml": "6.0.2",
    "imutils": "0.5.4",
    "numba": "0.61.2",
    "threadpoolctl": "3.6.0",
    "matplotlib": "3.8.4",
    "psutil": "7.0.0",
}

# Installed as dependencies of the pins (versions chosen by pip when the image was built), and
# the packaging tools upgraded in the Dockerfile. Present, so never vendored.
PULLED_IN = (
    "joblib",  # scikit-learn
    # pandas. Not six: python-dateutil 2.x pulled it in, 4.x does not, so it is not certain.
    "python-dateutil", "pytz", "tzdata",
    "llvmlite",  # numba
    "contourpy", "cycler", "fonttools", "kiwisolver", "packaging", "pillow", "pyparsing",  # matplotlib
    "pip", "setuptools", "wheel",
)

# Wheel platforms the image's glibc 2.36 accepts, newest first.
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")

# The part of the image the simulated worker installs when a bundle does not say what its
# program takes from the image (VENDOR.json "from_image" does). Everything else in the image is
# left out of the simulation, which makes it stricter, never looser.
SIMULATED = ("numpy", "pandas", "pyyaml")


def normalize(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""

    return re.sub(r"[-_.]+", "-", name).lower()


def provides(name: str) -> bool:
    """Whether the image already has the distribution ``name``."""
    n = normalize(name)
    return n in PINNED or n in {normalize(p) for p in PULLED_IN}
