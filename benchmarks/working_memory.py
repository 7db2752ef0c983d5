"""Benchmark of working memory: token counting speed and ``get_context`` cost.

Prints three tables:

1. tokens counted per second by the offline tokenizer (plain text and whole
   chat messages with their overhead);
2. for each buffer, on a 10,000-message conversation: time to add every
   message (each counted once), and ``get_context`` latency with the messages
   kept and the tokens returned;
3. scaling over 1k / 5k / 10k / 20k messages: ``get_context`` time per message
   *stored* and per message *kept*. Counts are cached, so FIFO and summary
   buffers cost O(messages kept) (flat as history grows); priority truncation
   and the LangGraph node (which reads the whole state) are O(messages stored)
   in cheap integer work, never re-tokenising.

    python -m benchmarks.working_memory
    python -m benchmarks.working_memory --sizes 1000 10000 --max-tokens 4000 --repeats 50

The conversation is synthetic and seeded: user/assistant turns of 5-60 words, a
tool call with two results every 10 turns, one system prompt, random priorities.
The summarising buffer uses the offline scripted model (no LLM is called).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from benchmarks._common import environment, format_table
from langchain_tiered_memory.testing.fakes import ScriptedChatModel
from langchain_tiered_memory.tiers.working import (
    ConversationBuffer,
    Priority,
    PriorityTruncationBuffer,
    SlidingWindowSummaryBuffer,
    WorkingBuffer,
    WorkingMemoryNode,
)
from langchain_tiered_memory.tokens import TokenCounter

_VOCAB_TEXT = (
    "the user asked about deployment logs error retry timeout database index query cache "
    "latency shellfish allergy dinner Oslo train ticket budget euros python function class "
    "memory episode fact strategy summary window token budget checkpoint thread ok thanks"
)
VOCAB = _VOCAB_TEXT.split(" ")


def conversation(n: int, seed: int = 7) -> list[tuple[BaseMessage, Priority]]:
    """A seeded synthetic conversation of exactly ``n`` messages."""
    rng = random.Random(seed)
    out: list[tuple[BaseMessage, Priority]] = [
        (SystemMessage("You are a helpful assistant. Be concise."), Priority.CRITICAL)
    ]
    turn = 0
    while len(out) < n:
        turn += 1
        text = " ".join(rng.choices(VOCAB, k=rng.randint(5, 60)))
        prio = rng.choice(list(Priority))
        if turn % 10 == 0 and len(out) + 3 <= n:
            calls = [
                {"name": "search", "args": {"q": f"t{turn}-{i}"}, "id": f"c{turn}-{i}"}
                for i in range(2)
            ]
            out.append((AIMessage("", tool_calls=calls), prio))
            for call in calls:
                out.append((ToolMessage(text, tool_call_id=call["id"]), Priority.HIGH))
        else:
            cls = HumanMessage if turn % 2 else AIMessage
            out.append((cls(text), prio))
    return out[:n]


def counting_speed(counter: TokenCounter, messages: list[BaseMessage]) -> list[list[Any]]:
    texts = [str(m.content) for m in messages]
    start = time.perf_counter()
    tokens = sum(counter.count(t) for t in texts)
    text_s = time.perf_counter() - start
    start = time.perf_counter()
    message_tokens = sum(counter.count_message(m) for m in messages)
    message_s = time.perf_counter() - start
    return [
        [
            f"count(text) {counter.encoding}",
            len(texts),
            tokens,
            tokens / text_s,
            len(texts) / text_s,
        ],
        [
            f"count_message {counter.encoding}",
            len(messages),
            message_tokens,
            message_tokens / message_s,
            len(messages) / message_s,
        ],
    ]


def make_buffers(max_tokens: int, counter: TokenCounter) -> dict[str, Callable[[], WorkingBuffer]]:
    return {
        "ConversationBuffer": lambda: ConversationBuffer(max_tokens, counter=counter),
        "PriorityTruncationBuffer": lambda: PriorityTruncationBuffer(max_tokens, counter=counter),
        "SlidingWindowSummaryBuffer": lambda: SlidingWindowSummaryBuffer(
            ScriptedChatModel(default="The user and assistant discussed deployment issues."),
            max_tokens,
            counter=counter,
            timeout=None,
        ),
    }


def median_ms(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), result


def fill(
    factory: Callable[[], WorkingBuffer], convo: list[tuple[BaseMessage, Priority]]
) -> tuple[WorkingBuffer, float]:
    buffer = factory()
    start = time.perf_counter()
    for message, prio in convo:
        buffer.add(message, priority=prio)
    return buffer, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10_000, 20_000])
    parser.add_argument("--max-tokens", type=int, default=8000)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()

    counter = TokenCounter()
    main_size = 10_000
    convo = conversation(max(main_size, *args.sizes))
    print(f"# Working memory benchmark ({environment()})\n")

    print("## Token counting (offline tiktoken)\n")
    rows = counting_speed(counter, [m for m, _ in convo[:main_size]])
    rows += counting_speed(TokenCounter("cl100k_base"), [m for m, _ in convo[:main_size]])
    print(format_table(["what", "items", "tokens", "tokens/s", "items/s"], rows))

    print(f"\n## {main_size:,} messages, max_tokens={args.max_tokens}\n")
    rows = []
    factories = make_buffers(args.max_tokens, counter)
    for name, factory in factories.items():
        buffer, add_s = fill(factory, convo[:main_size])
        ms, ctx = median_ms(buffer.get_context, args.repeats)
        rows.append(
            [
                name,
                len(buffer),
                add_s * 1e6 / main_size,
                ms,
                ctx.kept,
                ctx.tokens,
                counter.count_messages(ctx.messages) == ctx.tokens,
            ]
        )
    node = WorkingMemoryNode(max_tokens=args.max_tokens, counter=counter)
    state = {"messages": [m for m, _ in convo[:main_size]]}
    node(state)  # warm the token cache, as on a thread's second turn
    ms, update = median_ms(lambda: node(state), max(3, args.repeats // 10))
    rows.append(
        [
            "WorkingMemoryNode (trim)",
            main_size,
            None,
            ms,
            len(update["messages"]) - 1,
            counter.count_messages(update["messages"][1:]),
            True,
        ]
    )
    print(
        format_table(
            ["buffer", "stored", "add us/msg", "get_context ms", "kept", "tokens", "recount ok"],
            rows,
        )
    )

    print("\n## Scaling of get_context (median ms; us per message stored / kept)\n")
    rows = []
    for name, factory in factories.items():
        for size in args.sizes:
            buffer, _ = fill(factory, convo[:size])
            ms, ctx = median_ms(buffer.get_context, args.repeats)
            rows.append(
                [
                    name,
                    size,
                    len(buffer),
                    ctx.kept,
                    ms,
                    ms * 1000 / max(1, len(buffer)),
                    ms * 1000 / max(1, ctx.kept),
                ]
            )
    print(
        format_table(["buffer", "messages", "stored", "kept", "ms", "us/stored", "us/kept"], rows)
    )


if __name__ == "__main__":
    main()
