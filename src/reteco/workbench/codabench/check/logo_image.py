"""What Codabench accepts as a competition's logo: a PNG, JPEG, GIF or WebP, by its bytes.

A logo that is not one fails the upload at its last step, ``CompetitionSerializer`` in
``BaseUnpacker._save_competition``, after the tasks' files were stored (then deleted again);
``check-bundle`` says so first (``[image]``).
"""

from __future__ import annotations

from pathlib import Path

from reteco.workbench.codabench.check.check_report import Report

LOGO_TYPES = ("png", "jpg", "gif", "webp")
SIGNATURE_BYTES = 8192  # filetype reads this much of a file to guess its type


def logo_type(data: bytes) -> str | None:
    """The image type Codabench gives the logo's bytes, or None when it is not an image.

    ``BaseUnpacker._read_image`` sends the logo to ``CompetitionSerializer.logo``, a
    ``NamedBase64ImageField`` (``src/apps/api/fields.py``) whose ``to_internal_value`` keeps it only
    if ``Base64ImageField.get_file_extension`` (drf-extra-fields 3.7.0) is in its ``ALLOWED_TYPES``
    (jpeg, jpg, png, gif, webp). That extension is ``filetype.guess_extension`` (filetype 1.2.0,
    which matches the first 8192 bytes, image types first, in this order: JPEG ``FF D8 FF``, APNG
    (a PNG whose ``acTL`` chunk precedes ``IDAT``), PNG ``89 50 4E 47``, GIF ``GIF``, WebP
    ``RIFF....WEBPVP``), else Pillow's format name. Then ``Competition.save`` makes the logo icon
    with ``PIL.Image.open``, which wants the full signatures: PNG's 8 bytes, ``GIF87a``/``GIF89a``.
    So an image is accepted here only with both signatures; an animated PNG (``apng``) or any other
    file (SVG, BMP, text) fails the upload.
    """
    head = data[:SIGNATURE_BYTES]
    if head[:3] == b"\xff\xd8\xff":
        return "jpg"
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        return "apng" if _animated_png(head) else "png"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if head[:4] == b"RIFF" and head[8:14] == b"WEBPVP":
        return "webp"
    return None


def _animated_png(head: bytes) -> bool:
    """filetype's APNG matcher: an ``acTL`` chunk before the first ``IDAT`` or ``IEND``."""
    i = 8
    while len(head) > i:
        length = int.from_bytes(head[i:i + 4], "big")
        kind = head[i + 4:i + 8]
        if kind in (b"IDAT", b"IEND"):
            return False
        if kind == b"acTL":
            return True
        i += 12 + length  # length, type, data, CRC
    return False


def check_logo(local: Path, path: str, report: Report) -> None:
    """``[image]``: the logo at bundle path ``path`` must be an image Codabench's logo field accepts."""
    if local.is_dir():
        report.error("image", f"the logo {path} is a folder, not an image")
        return
    with open(local, "rb") as handle:
        kind = logo_type(handle.read(SIGNATURE_BYTES))
    if kind not in LOGO_TYPES:
        found = "an animated PNG" if kind == "apng" else "not a PNG, JPEG, GIF or WebP image by its content"
        report.error("image", f"the logo {path} is {found}: Codabench's upload fails on it (its logo field accepts "
                     f"{', '.join(LOGO_TYPES)})")
