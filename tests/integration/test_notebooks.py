"""Every notebook runs top to bottom, offline, in a temporary working directory.

The notebooks are committed with their outputs (plots included), so they read well on a
repository page; the test re-executes a copy and checks that it still runs, and that it
removes the temporary directories it made.

The kernel talks to the test over Unix sockets (IPC transport, no TCP port),
and its first cell disables every non-Unix socket with ``pytest-socket``, so
a notebook that reached for the network would fail here.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

for extra_module in ("ipykernel", "matplotlib", "nbclient"):  # the notebooks extra
    pytest.importorskip(
        extra_module, reason='needs the notebooks extra: pip install ".[notebooks]"'
    )

import nbformat  # noqa: E402  (installed with nbclient, after the check above)
from jupyter_client.manager import KernelManager  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

pytestmark = pytest.mark.integration

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
MODEL_SWITCH = 'model = load_chat_model("offline")  # or "openai:'
NO_NETWORK = "import pytest_socket\npytest_socket.disable_socket(allow_unix_socket=True)"
STILL_NO_NETWORK = """
import socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM)
except pytest_socket.SocketBlockedError:
    pass
else:
    raise AssertionError("the network was reachable from the notebook's kernel")
"""
CELL_TIMEOUT = 180
BUDGET_SECONDS = 60


def test_the_four_notebooks_are_there() -> None:
    assert [p.name for p in NOTEBOOKS] == [
        "01_quickstart.ipynb",
        "02_tiers.ipynb",
        "03_agent_graph.ipynb",
        "04_evaluation.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_with_outputs_and_a_model_switch(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), (
        "commit the notebook executed: jupyter nbconvert --to notebook --execute --inplace "
        + path.name
    )
    assert [n for n, c in enumerate(code, 1) if c.execution_count != n] == [], (
        "run it top to bottom"
    )
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    # One line near the top switches the whole notebook to a real model.
    assert any(MODEL_SWITCH in c.source for c in code[:2])


def test_a_committed_notebook_shows_a_plot() -> None:
    images = [
        path.name
        for path in NOTEBOOKS
        for cell in nbformat.read(path, as_version=4).cells
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]
    assert images, "at least one notebook is committed with a plot"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_offline(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    kernel_tmp = tmp_path / "kernel-tmp"
    kernel_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(kernel_tmp))  # the kernel's tempfile directory
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(NO_NETWORK))
    nb.cells.append(nbformat.v4.new_code_cell(STILL_NO_NETWORK))
    km = KernelManager(kernel_name="python3", transport="ipc", ip=str(tmp_path / "kernel"))
    client = NotebookClient(
        nb,
        km=km,
        timeout=CELL_TIMEOUT,
        allow_errors=False,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    started = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - started
    errors = [
        output
        for cell in nb.cells
        for output in cell.get("outputs", [])
        if output.output_type == "error"
    ]
    assert errors == []
    assert elapsed < 3 * BUDGET_SECONDS, f"{path.name} took {elapsed:.0f} s"
    # The notebook removed the temporary directories it made (the kernel keeps dotfiles).
    assert sorted(p.name for p in kernel_tmp.iterdir() if not p.name.startswith(".")) == []
    # Nothing was written next to the notebooks.
    assert sorted(p.name for p in NOTEBOOK_DIR.iterdir()) == sorted(p.name for p in NOTEBOOKS)
