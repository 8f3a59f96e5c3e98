"""Unpacking an uploaded problem archive (.zip or .tar.gz), which is untrusted input:
sizes and counts are capped, and only plain files under the archive's root are taken."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from grader.kernelbench import find_modules
from server.errors import BadRequest, PayloadTooLarge

MAX_FILES = 200
MAX_UNPACKED_BYTES = 50_000_000


def safe_member_path(name: str) -> PurePosixPath:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise BadRequest(f"the archive holds an unsafe path {name!r}")
    return path


def unpack(raw: bytes, filename: str, target: Path) -> None:
    """Write the archive's regular files under ``target``; refuse anything else."""
    lower = filename.lower()
    if lower.endswith(".zip"):
        files = read_zip(raw)
    elif lower.endswith((".tar.gz", ".tgz")):
        files = read_tar(raw)
    else:
        raise BadRequest("the archive must be a .zip or a .tar.gz file")
    total = 0
    for name, content in files:
        total += len(content)
        if total > MAX_UNPACKED_BYTES:
            raise PayloadTooLarge(f"the archive unpacks to over {MAX_UNPACKED_BYTES} bytes")
        destination = target / safe_member_path(name)
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(content)


def read_zip(raw: bytes) -> list[tuple[str, bytes]]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile as exc:
        raise BadRequest("the archive is not a readable .zip file") from exc
    members = [info for info in archive.infolist() if not info.is_dir()]
    check_count(len(members))
    files = []
    for info in members:
        # Zip entries made by Unix tools carry the file type in the high bits; 0o12 is a link.
        if (info.external_attr >> 28) == 0o12:
            raise BadRequest(f"the archive holds a symbolic link {info.filename!r}")
        if info.file_size > MAX_UNPACKED_BYTES:
            raise PayloadTooLarge(f"{info.filename!r} unpacks to over {MAX_UNPACKED_BYTES} bytes")
        safe_member_path(info.filename)
        with archive.open(info) as member:
            files.append((info.filename, member.read(MAX_UNPACKED_BYTES + 1)))
    return files


def read_tar(raw: bytes) -> list[tuple[str, bytes]]:
    try:
        archive = tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz")  # noqa: SIM115 (closed below)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise BadRequest("the archive is not a readable .tar.gz file") from exc
    with archive:
        try:
            members = archive.getmembers()
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise BadRequest("the archive is not a readable .tar.gz file") from exc
        files = []
        check_count(len(members))
        for member in members:
            if member.isdir():
                continue
            if not member.isfile():
                raise BadRequest(f"the archive holds {member.name!r}, which is not a regular file")
            if member.size > MAX_UNPACKED_BYTES:
                raise PayloadTooLarge(f"{member.name!r} unpacks to over {MAX_UNPACKED_BYTES} bytes")
            safe_member_path(member.name)
            extracted = archive.extractfile(member)
            if extracted is None:
                raise BadRequest(f"{member.name!r} could not be read")
            files.append((member.name, extracted.read(MAX_UNPACKED_BYTES + 1)))
    return files


def check_count(count: int) -> None:
    if count > MAX_FILES:
        raise PayloadTooLarge(f"the archive holds over {MAX_FILES} entries")


def find_problem_folder(root: Path) -> Path:
    """The one folder in the unpacked archive that holds a task.yml, or else its one
    KernelBench module (a .py file with Model, get_inputs and get_init_inputs)."""
    folders = sorted(path.parent for path in root.rglob("task.yml"))
    if not folders:
        modules = find_modules(root, recursive=True)
        if len(modules) == 1:
            return modules[0]
        if len(modules) > 1:
            listed = ", ".join(str(module.relative_to(root)) for module in modules)
            raise BadRequest(f"the archive holds several KernelBench modules ({listed})")
        raise BadRequest(
            "the archive holds no task.yml (a GPU MODE problem folder) and no KernelBench "
            "module (a .py file defining Model, get_inputs and get_init_inputs)"
        )
    if len(folders) > 1:
        listed = ", ".join(str(folder.relative_to(root)) for folder in folders)
        raise BadRequest(f"the archive holds several problems ({listed}); upload one at a time")
    return folders[0]
