"""Two parallel retrieval test corpora, Chinese and English, with questions and their answers.

Written for the tests (the Chinese passages follow the topics of the Chinese workflow tutorials
in the project's seed documents): twelve short documents about event-driven workflows, the
same twelve in both languages, and sixteen questions each naming the document that answers
it. The questions are phrased as a user would ask, not copied from the passages, so hit@3
measures retrieval rather than string matching. ``bench/rag_bench.py`` reports hit@3 on both.
"""

from __future__ import annotations

ZH_DOCS: dict[str, str] = {
    "context.md": "Context 是整个工作流共享的上下文。用户信息、累计的统计数据和缓存的中间结果"
    "都放在 Context 里，后面的每个步骤都可以读取。",
    "state.md": "状态存储通过 ctx.store 读写：用 set 写入一个键，用 get 读取，读不到时可以给"
    "默认值。状态应当是可以序列化的数据，这样才能做快照和恢复。",
    "events.md": "步骤之间靠事件传递数据。一个步骤返回什么事件，接受这个事件类型的下一个步骤"
    "就会被调用，所以流程的顺序由事件的类型决定。",
    "step.md": "用 @step 装饰器把一个异步方法变成工作流的步骤。装饰器会读取参数和返回值的类型"
    "注解，在定义时就检查每个步骤能接收和发出哪些事件。",
    "stream.md": "流式输出：在步骤里调用 ctx.write_event_to_stream 把进度事件写到事件流，调用方"
    "用 handler.stream_events() 一边运行一边接收，不必等到最后。",
    "hitl.md": "人在回路：工作流发出 InputRequiredEvent 后暂停，等待人工审批；用户通过"
    "HumanResponseEvent 回复之后，工作流从暂停的地方继续执行。",
    "retry.md": "重试策略：给步骤设置 retry_policy，调用大模型失败或者网络超时的时候自动重新执行，"
    "可以设置最多尝试几次以及两次之间等待多久。",
    "timeout.md": "超时：运行整个工作流时可以设置 timeout 秒数，超过时间还没有结束就会取消所有"
    "正在执行的步骤并抛出超时错误。",
    "concurrency.md": "并发：num_workers 决定同一个步骤最多同时处理几个事件。发出多个事件可以让"
    "几个任务并行运行，再用 collect_events 等它们全部完成后汇总结果。",
    "checkpoint.md": "检查点：每个步骤结束时把运行的状态保存到 SQLite 数据库。进程崩溃或者机器重启"
    "以后，可以从最近的检查点恢复运行，已经完成的步骤不会再执行一遍。",
    "tracing.md": "可观测性：每次运行和每个步骤都会生成 OpenTelemetry 的 span，可以把追踪数据导出到"
    "Jaeger 里查看每一步花了多少时间。",
    "rag.md": "检索增强生成：先把文档切成小块存进向量数据库 Qdrant，提问时检索最相关的几段文字，"
    "再让大模型根据这些段落回答，并标出引用的来源。",
}

EN_DOCS: dict[str, str] = {
    "context.md": "The Context is shared by the whole workflow. User information, accumulated "
    "statistics and cached intermediate results live in the Context, where every later step "
    "can read them.",
    "state.md": "The state store is read and written through ctx.store: set writes a key, get "
    "reads it and can return a default when it is missing. State should be serializable data, "
    "so that it can be snapshotted and restored.",
    "events.md": "Steps pass data to each other with events. Whatever event a step returns, the "
    "next step that accepts that event type is called, so the order of the flow follows the "
    "types of the events.",
    "step.md": "The @step decorator turns an async method into a step of the workflow. It reads "
    "the type annotations of the parameters and the return value and checks at definition time "
    "which events each step accepts and emits.",
    "stream.md": "Streaming: inside a step, ctx.write_event_to_stream writes progress events to "
    "the event stream, and the caller receives them with handler.stream_events() while the run "
    "goes on, without waiting for the end.",
    "hitl.md": "Human in the loop: the workflow emits an InputRequiredEvent and pauses to wait for "
    "a person's approval; after the user replies with a HumanResponseEvent the workflow carries "
    "on from where it paused.",
    "retry.md": "Retry policies: give a step a retry_policy and it runs again automatically when a "
    "call to the language model fails or the network times out; you choose how many attempts "
    "at most and how long to wait between two of them.",
    "timeout.md": "Timeouts: a whole workflow run can be given a timeout in seconds; when it has "
    "not finished by then, every running step is cancelled and a timeout error is raised.",
    "concurrency.md": "Concurrency: num_workers sets how many events one step handles at the same "
    "time. Sending several events lets tasks run in parallel, and collect_events waits for all "
    "of them to finish before combining their results.",
    "checkpoint.md": "Checkpoints: at the end of every step the state of the run is saved in a "
    "SQLite database. After the process crashes or the machine reboots, the run resumes from "
    "the latest checkpoint, and the steps that had finished are not run again.",
    "tracing.md": "Observability: every run and every step produces an OpenTelemetry span, and "
    "the traces can be exported to Jaeger to see how much time each step took.",
    "rag.md": "Retrieval-augmented generation: documents are cut into chunks and stored in the "
    "vector database Qdrant; a question retrieves the most relevant passages, and the language "
    "model answers from those passages and cites its sources.",
}

#: (question, the document that answers it), in Chinese and in English.
ZH_QUERIES: list[tuple[str, str]] = [
    ("多个步骤之间怎么共享用户信息?", "context.md"),
    ("怎样在状态存储里读写一个键?", "state.md"),
    ("状态为什么必须能序列化?", "state.md"),
    ("下一个被调用的步骤是由什么决定的?", "events.md"),
    ("装饰器怎么检查步骤的类型注解?", "step.md"),
    ("运行还没结束时怎样接收进度事件?", "stream.md"),
    ("工作流怎么暂停等待人工审批?", "hitl.md"),
    ("大模型调用失败以后能自动重新执行吗?", "retry.md"),
    ("运行时间太长会怎么样?", "timeout.md"),
    ("超时以后正在执行的步骤会被取消吗?", "timeout.md"),
    ("怎么让几个任务并行运行再汇总结果?", "concurrency.md"),
    ("一个步骤最多同时处理几个事件?", "concurrency.md"),
    ("进程崩溃以后怎样恢复运行?", "checkpoint.md"),
    ("怎么在 Jaeger 里查看每一步花了多少时间?", "tracing.md"),
    ("文档切块以后存到哪个向量数据库?", "rag.md"),
    ("回答问题时怎么标出引用的来源?", "rag.md"),
]

EN_QUERIES: list[tuple[str, str]] = [
    ("How do several steps share user information?", "context.md"),
    ("How do I read and write a key in the state store?", "state.md"),
    ("Why must the state be serializable?", "state.md"),
    ("What decides which step is called next?", "events.md"),
    ("How does the decorator check a step's type annotations?", "step.md"),
    ("How can I receive progress events before the run ends?", "stream.md"),
    ("How does a workflow pause to wait for a person's approval?", "hitl.md"),
    ("Can a failed language model call run again automatically?", "retry.md"),
    ("What happens when a run takes too long?", "timeout.md"),
    ("Are running steps cancelled after a timeout?", "timeout.md"),
    ("How do I run several tasks in parallel and combine the results?", "concurrency.md"),
    ("How many events can one step handle at the same time?", "concurrency.md"),
    ("How does a run resume after the process crashes?", "checkpoint.md"),
    ("How can I see in Jaeger how much time each step took?", "tracing.md"),
    ("Which vector database are the document chunks stored in?", "rag.md"),
    ("How are the cited sources marked in an answer?", "rag.md"),
]


def hit_at_k(found: list[list[str]], expected: list[str]) -> float:
    """The share of questions whose answering document is among the sources found for it."""
    return sum(want in got for got, want in zip(found, expected, strict=True)) / len(expected)
