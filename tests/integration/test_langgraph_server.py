"""graphs/memory_agent.py served by ``langgraph dev`` and called through langgraph_sdk.

Also runs the agent in-process on the real default memory (embedded Qdrant,
bundled MiniLM embeddings, offline tokenizer).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.integrations.agent import create_memory_agent
from langchain_tiered_memory.testing.offline_model import OfflineChatModel

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
STARTUP_SECONDS = 180
# Signs that the server tried to reach the internet rather than failed on its own.
_NETWORK_FAILURE = re.compile(
    r"getaddrinfo|Name or service not known|Temporary failure in name resolution|"
    r"Network is unreachable|ConnectError|SocketBlockedError",
    re.I,
)


def config_in(directory: Path) -> Path:
    """The repository's langgraph.json with its paths made absolute, written to ``directory``."""
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert config["graphs"] == {"memory_agent": "./graphs/memory_agent.py:graph"}
    config["dependencies"] = [str(ROOT / d) for d in config["dependencies"]]
    config["graphs"] = {
        name: str(ROOT / spec.removeprefix("./")) for name, spec in config["graphs"].items()
    }
    path = directory / "langgraph.json"
    path.write_text(json.dumps(config))
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def is_ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def log_tail(path: Path, lines: int = 40) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)  # the server and the workers it started
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    cli = shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which(
        "langgraph"
    )
    if cli is None:
        pytest.skip('langgraph-cli is not installed: pip install "langchain-tiered-memory[server]"')
    port = free_port()
    url = f"http://{HOST}:{port}"
    env = {
        **os.environ,
        "TIERED_MEMORY_PATH": str(tmp_path / "memory"),
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "HF_HUB_OFFLINE": "1",
    }
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                *(cli, "dev", "--no-browser", "--no-reload"),
                *("--host", HOST, "--port", str(port)),
                *("--config", str(config_in(tmp_path))),
            ],
            cwd=tmp_path,  # langgraph dev keeps its .langgraph_api/ state in the working dir
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not is_ready(url):
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log_tail(log)
                if _NETWORK_FAILURE.search(tail):
                    pytest.skip(f"langgraph dev could not start offline:\n{tail}")
                pytest.fail(f"langgraph dev did not become ready at {url}:\n{tail}")
            time.sleep(0.5)
        yield url
    finally:
        stop(process)


def run(client: Any, user: str, text: str, **kwargs: Any) -> str:
    thread = client.threads.create()
    result = client.runs.wait(
        thread["thread_id"],
        "memory_agent",
        input={"messages": [{"role": "user", "content": text}]},
        **kwargs,
    )
    return str(result["messages"][-1]["content"])


@pytest.mark.enable_socket
@pytest.mark.allow_hosts([HOST])
def test_langgraph_dev_round_trip_through_the_sdk(server: str) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server)
    assert run(client, "alice", "I'm allergic to shellfish", context={"user_id": "alice"})

    # Write-back is applied by the server's writer thread shortly after the run.
    deadline = time.monotonic() + 30
    answer = ""
    while "shellfish" not in answer.lower() and time.monotonic() < deadline:
        answer = run(
            client,
            "alice",
            "Recommend a restaurant for dinner tonight",
            context={"user_id": "alice"},
        )
        time.sleep(0.5)
    assert "Allergic to shellfish" in answer

    # The user may also come in config["configurable"]; another user sees nothing of alice.
    bob = run(
        client,
        "bob",
        "Recommend a restaurant for dinner tonight",
        config={"configurable": {"user_id": "bob"}},
    )
    assert "shellfish" not in bob.lower()


def test_agent_in_process_with_default_memory(tmp_path: Path) -> None:
    with TieredMemory.open(tmp_path) as memory:  # bundled MiniLM embeddings, hybrid retrieval
        agent = create_memory_agent(OfflineChatModel(), memory=memory)
        alice = {"user_id": "alice"}
        agent.invoke(
            {"messages": [("user", "I'm allergic to shellfish")]},
            {"configurable": {"thread_id": "1"}},
            context=alice,
        )
        agent.invoke(
            {"messages": [("user", "Remember that I am vegetarian")]},
            {"configurable": {"thread_id": "1"}},
            context=alice,
        )
        memory.flush()
        out = agent.invoke(
            {"messages": [("user", "Recommend a restaurant for dinner tonight")]},
            {"configurable": {"thread_id": "2"}},
            context=alice,
        )
        answer = out["messages"][-1].content
        assert "Allergic to shellfish" in answer
        assert "vegetarian" in answer.lower()
        bob = agent.invoke(
            {"messages": [("user", "Recommend a restaurant for dinner tonight")]},
            {"configurable": {"thread_id": "3"}},
            context={"user_id": "bob"},
        )
        assert "shellfish" not in bob["messages"][-1].content.lower()
