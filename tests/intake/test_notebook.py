"""Notebook -> Python source: code cells in order, IPython dropped, clear errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.intake.notebook import NotebookError, notebook_to_source

SOLUTIONS = Path(__file__).parent.parent / "graders" / "solutions"


def code(source: str | list[str], outputs: list[Any] | None = None) -> dict[str, Any]:
    return {"cell_type": "code", "metadata": {}, "outputs": outputs or [], "source": source}


def markdown(source: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def notebook(*cells: dict[str, Any]) -> str:
    return json.dumps({"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_the_example_notebook_converts_to_runnable_source() -> None:
    converted = notebook_to_source((SOLUTIONS / "correct_magics.ipynb").read_text())
    compile(converted.source, "correct_magics.ipynb", "exec")
    assert converted.notes == (
        "dropped 3 IPython magic/shell lines (cells 2, 5)",
        "skipped 1 cell starting with a cell magic (cell 6 %%timeit); "
        "move any definitions out of such cells",
    )
    lines = converted.source.splitlines()
    assert lines[:3] == ["# cell 2", "pass  # IPython line dropped", "import torch"]
    assert "%%timeit" not in converted.source and "# cell 6" not in converted.source
    for cell in ("# cell 3", "# cell 5", "# cell 7", "# cell 8"):
        assert cell in lines


def test_cells_run_in_order_and_markdown_and_outputs_are_ignored() -> None:
    huge_output = {"output_type": "stream", "name": "stdout", "text": ["x" * 100_000]}
    text = notebook(
        markdown("# Title\n%not a magic, just markdown"),
        code("a = 1", [huge_output]),
        {"cell_type": "raw", "metadata": {}, "source": "!raw"},
        code(["b = a + 1\n", "c = b * 2"]),
    )
    converted = notebook_to_source(text)
    assert converted.source == "# cell 2\na = 1\n\n# cell 4\nb = a + 1\nc = b * 2\n"
    assert converted.notes == ()
    namespace: dict[str, int] = {}
    exec(converted.source, namespace)  # our own test cells, not learner code
    assert namespace["c"] == 4


@pytest.mark.parametrize(
    "line",
    [
        "%time f()",
        "%matplotlib inline",
        "!pip install torch",
        "?torch.dot",
        "torch.dot?",
        "torch.dot??",
        "files = !ls",
        "t = %timeit -o f()",
        "get_ipython().run_line_magic('time', 'f()')",
    ],
)
def test_ipython_lines_become_pass(line: str) -> None:
    converted = notebook_to_source(notebook(code(f"x = 1\n{line}\ny = 2")))
    assert converted.source == "# cell 1\nx = 1\npass  # IPython line dropped\ny = 2\n"
    assert converted.notes == ("dropped 1 IPython magic/shell line (cell 1)",)


def test_an_indented_magic_keeps_its_block_valid() -> None:
    source = notebook_to_source(notebook(code("for i in range(3):\n    %time f(i)\nz = 1"))).source
    compile(source, "nb", "exec")
    assert "    pass  # IPython line dropped" in source


def test_cells_that_are_valid_python_are_untouched() -> None:
    cell = "x = (10\n% 3)\ny = '''\n!not shell\n'''"
    assert notebook_to_source(notebook(code(cell))).source == f"# cell 1\n{cell}\n"


def test_magic_lookalikes_inside_strings_are_kept() -> None:
    cell = 'doc = """\n%d items\n"""\n%time f()'
    source = notebook_to_source(notebook(code(cell))).source
    assert "%d items" in source
    assert source.endswith("pass  # IPython line dropped\n")


def test_cell_magics_drop_the_whole_cell() -> None:
    text = notebook(code("%%bash\necho hi"), code("%%time\ndef f(): pass"), code("x = 1"))
    converted = notebook_to_source(text)
    assert converted.source == "# cell 3\nx = 1\n"
    assert converted.notes == (
        "skipped 2 cells starting with a cell magic (cell 1 %%bash, cell 2 %%time); "
        "move any definitions out of such cells",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"cells": [', "it is not valid JSON (line 1, column 12: Expecting value)"),
        ("[]", "the top level must be a JSON object with a 'cells' list"),
        ('{"worksheets": [], "nbformat": 3}', "it is an old nbformat 3 notebook"),
        ('{"cells": []}', "it has no 'nbformat' field, so it is not a Jupyter notebook"),
        ('{"cells": [], "nbformat": 5}', "it is nbformat 5; only nbformat 4 notebooks"),
        ('{"cells": {}, "nbformat": 4}', "it has no 'cells' list"),
        ('{"cells": [3], "nbformat": 4}', "cell 1 is not an object with a 'cell_type'"),
        ('{"cells": [{"source": "x"}], "nbformat": 4}', "cell 1 is not an object with a"),
        (notebook(markdown("a"), code([1, 2])), "cell 2: 'source' must be a string or a list"),
        (notebook(code(None)), "cell 1: 'source' must be a string or a list of strings"),  # type: ignore[arg-type]
        (notebook(), "it has no code cells (no cells at all)"),
        (notebook(markdown("a"), markdown("b")), "it has no code cells (only 2 markdown or raw"),
        (notebook(code("  \n"), code("!ls\n%time x")), "its code cells are empty or contain only"),
        ("[" * 100_000 + "]" * 100_000, "it is not valid notebook JSON"),
    ],
)
def test_malformed_notebooks_are_explained(text: str, message: str) -> None:
    with pytest.raises(NotebookError) as caught:
        notebook_to_source(text)
    assert message in str(caught.value)


def test_the_example_malformed_and_empty_notebooks() -> None:
    with pytest.raises(NotebookError, match="cell 1: 'source' must be a string"):
        notebook_to_source((SOLUTIONS / "malformed.ipynb").read_text())
    with pytest.raises(NotebookError, match=r"no code cells \(only 2 markdown or raw cells\)"):
        notebook_to_source((SOLUTIONS / "no_code.ipynb").read_text())
