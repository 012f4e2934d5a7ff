"""No package registry's address anywhere in the tree.

Indexes are named in words ("the Python Package Index", "PyTorch's CPU wheel index"); a value
that pip needs (``--index-url``) comes from a build argument or an environment variable that
the docs describe in words.  This searches every tracked file (every file outside .git,
virtual environments and build output where git is not at hand).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from tests.support import REPO

# Written as patterns (escaped dots), so that this file names no host itself.
REGISTRY_HOSTS = re.compile(
    r"(?<![\w.-])(?:[\w-]+\.)*(?:"
    r"pypi\.org|pypi\.python\.org|pythonhosted\.org|"
    r"download\.pytorch\.org|"
    r"anaconda\.org|anaconda\.com|conda-forge\.org|"
    r"npmjs\.org|npmjs\.com|yarnpkg\.com|"
    r"crates\.io|rubygems\.org|proxy\.golang\.org|"
    r"repo1\.maven\.org|repo\.maven\.apache\.org|"
    r"nuget\.org|packagist\.org|hex\.pm"
    r")(?![\w-])",
    re.IGNORECASE,
)
SKIPPED_DIRS = {".git", ".venv", "venv", "site", "build", "dist", "__pycache__", "node_modules"}


def tracked_files() -> list[Path]:
    git = shutil.which("git")
    if git and (REPO / ".git").exists():
        listed = subprocess.run(
            [git, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout
        return [REPO / name for name in listed.decode().split("\0") if name]
    return [
        path
        for path in REPO.rglob("*")
        if path.is_file() and not SKIPPED_DIRS & set(path.relative_to(REPO).parts)
    ]


def test_the_pattern_finds_what_it_should() -> None:
    host = "files." + "pythonhosted" + ".org"
    assert REGISTRY_HOSTS.search(f"pip download https://{host}/packages/x.whl")
    assert REGISTRY_HOSTS.search("--index-url https://download." + "pytorch.org/whl/cpu")
    assert not REGISTRY_HOSTS.search("https://pytorch.org/docs/stable/notes/broadcasting.html")
    assert not REGISTRY_HOSTS.search("the Python Package Index (PyPI)")


def test_no_file_names_a_package_registry_host() -> None:
    files = tracked_files()
    assert REPO / "pyproject.toml" in files and REPO / "Dockerfile" in files
    found = []
    for path in files:
        if not path.is_file():
            continue  # listed but deleted in the work tree
        text = path.read_bytes().decode("utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            match = REGISTRY_HOSTS.search(line)
            if match:
                found.append(f"{path.relative_to(REPO)}:{number}: {match.group(0)}")
    assert not found, "name the index in words instead:\n" + "\n".join(found)
