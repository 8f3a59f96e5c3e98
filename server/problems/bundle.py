"""A problem's folder for competitors (``GET /api/v1/problems/{name}/bundle``): what
``kerneljudge grade`` needs to grade a submission locally, and nothing a submission may not
see already, bar the reference when the organizers made it public."""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import PurePosixPath

import yaml

from grader.problem import SKIPPED_FILES, SUBMISSION_MARK, TASK_FILE, builtin_problems
from server.models import Problem
from server.problems.loaded import loaded
from server.problems.service import files_digest

MEDIA_TYPE = "application/zip"
REFERENCE = "reference.py"
# task.yml key of our own: the organizers' choice to give competitors the reference.
PUBLIC_REFERENCE = "public_reference"


@dataclass(frozen=True)
class Bundle:
    filename: str
    content: bytes


def make(problem: Problem) -> Bundle:
    """A zip of one folder, ``{name}/``: the files a grading's sandbox holds (task.yml with
    its sources pointing next to it, task.py, utils.py, ...), the template as submission.py,
    and reference.py when it is public. The secret seed lives in the database, never in the
    problem's files, and example solutions are kept apart from them."""
    read = loaded(problem)
    public = reference_is_public(problem)
    files = {
        name: text
        for name, text in read.files.items()
        if name != TASK_FILE and (public or name != REFERENCE) and is_plain_path(name)
    }
    files[TASK_FILE] = local_task_file(read.files[TASK_FILE])
    stamp = problem.updated_at.timetuple()[:6]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            entry = zipfile.ZipInfo(f"{problem.name}/{name}", date_time=stamp)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o644 << 16
            archive.writestr(entry, files[name])
    return Bundle(filename=f"{problem.name}.zip", content=buffer.getvalue())


def reference_is_public(problem: Problem) -> bool:
    """The organizers' ``public_reference`` in task.yml when they set it. Otherwise public
    for a KernelBench problem (its reference is the module, which competitors must read to
    write ModelNew and which the sandbox holds anyway, wrapped in code that is the same for
    every such problem) and for a built-in problem as shipped (its files are published with
    KernelJudge's source); private for any other, since a reference may show how to solve
    the problem. A bundle without it cannot be graded locally: test mode on the server can."""
    read = loaded(problem)
    choice = read.spec.get(PUBLIC_REFERENCE)
    if isinstance(choice, bool):
        return choice
    return read.format == "kernelbench" or problem.files_sha256 in published_digests()


@cache
def published_digests() -> frozenset[str]:
    """The files digests of the built-in problems as they ship."""
    return frozenset(files_digest(problem.files) for problem in builtin_problems())


def is_plain_path(name: str) -> bool:
    """A file name that stays inside the bundle's folder wherever it is unpacked."""
    path = PurePosixPath(name)
    return bool(name) and not path.is_absolute() and ".." not in path.parts and "\\" not in name


def local_task_file(text: str) -> str:
    """task.yml with each file's source pointing next to it, as the bundle lays the files
    out (a problem's task.yml may name ``../utils.py``, shared by the problems of its
    repository); the rest as the organizers wrote it, comments included. The template's
    entry (``@SUBMISSION@``) and GPU MODE's eval.py, which we do not use, stay as they are."""
    spec = yaml.safe_load(text)
    for entry in spec.get("files") or []:
        if entry["source"] != SUBMISSION_MARK and entry["name"] not in SKIPPED_FILES:
            entry["source"] = entry["name"]
    try:
        rewritten = replace_sources(text)
    except (yaml.YAMLError, KeyError, TypeError, AttributeError):
        rewritten = ""
    if rewritten and yaml.safe_load(rewritten) == spec:
        return rewritten
    # A task.yml whose sources cannot be replaced in place (anchors, say): the same
    # mapping, without its comments.
    return yaml.safe_dump(spec, sort_keys=False, allow_unicode=True)


def replace_sources(text: str) -> str:
    """``text`` with each files entry's source scalar replaced, where it stands, by the
    entry's name."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(root, yaml.MappingNode):
        raise TypeError("task.yml is not a mapping")
    entries = next(value for key, value in root.value if key.value == "files")
    spans: list[tuple[int, int, str]] = []
    for entry in entries.value:
        fields = {key.value: value for key, value in entry.value}
        name, source = fields["name"].value, fields["source"]
        if source.value not in (SUBMISSION_MARK, name) and name not in SKIPPED_FILES:
            spans.append((source.start_mark.index, source.end_mark.index, json.dumps(name)))
    for start, end, replacement in sorted(spans, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text
