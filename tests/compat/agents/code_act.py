"""docs/examples/agent/code_act_agent.ipynb: a CodeActAgent with the notebook's code executor.

Filled in: the scripted LLM for OpenAI (its replies are the notebook's recorded ones); the
notebook's cells run in main(); the roles of each LLM call are printed at the end.
"""

import ast
import asyncio
import contextlib
import io
import traceback
from typing import Any

from _llm import ScriptedLLM
from llama_index.core.agent.workflow import AgentStream, CodeActAgent, ToolCall, ToolCallResult
from llama_index.core.workflow import Context

llm = ScriptedLLM(
    [
        "The sum of all numbers from 1 to 10 can be calculated using the formula for the sum of"
        " an arithmetic series. However, I will compute it directly for you.\n\n<execute>\n#"
        " Calculate the sum of numbers from 1 to 10\ntotal_sum = sum(range(1, 11))\n"
        "print(total_sum)\n</execute>",
        "The sum of all numbers from 1 to 10 is 55.",
        "I will perform the addition of 5 and 3, and then multiply the result by 2.\n\n<execute>\n"
        "# Perform the calculation\naddition_result = add(5, 3)\nfinal_result ="
        " multiply(addition_result, 2)\nprint(final_result)\n</execute>",
        "The result of adding 5 and 3, then multiplying by 2, is 16.",
    ]
)


# Define a few helper functions
def add(a: int, b: int) -> int:
    """Add two numbers together"""
    return a + b


def subtract(a: int, b: int) -> int:
    """Subtract two numbers"""
    return a - b


def multiply(a: int, b: int) -> int:
    """Multiply two numbers"""
    return a * b


def divide(a: int, b: int) -> float:
    """Divide two numbers"""
    return a / b


class SimpleCodeExecutor:
    """
    A simple code executor that runs Python code with state persistence.

    NOTE: not safe for production use! Use with caution.
    """

    def __init__(self, locals: dict[str, Any], globals: dict[str, Any]):
        # State that persists between executions
        self.globals = globals
        self.locals = locals

    def execute(self, code: str) -> tuple[bool, str, Any]:
        # Capture stdout and stderr
        stdout = io.StringIO()
        stderr = io.StringIO()

        output = ""
        return_value = None
        try:
            # Execute with captured output
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                # Try to detect if there's a return value (last expression)
                try:
                    tree = ast.parse(code)
                    last_node = tree.body[-1] if tree.body else None

                    # If the last statement is an expression, capture its value
                    if isinstance(last_node, ast.Expr):
                        # Split code to add a return value assignment
                        last_line = code.rstrip().split("\n")[-1]
                        exec_code = code[: -len(last_line)] + "\n__result__ = " + last_line

                        # Execute modified code
                        exec(exec_code, self.globals, self.locals)
                        return_value = self.locals.get("__result__")
                    else:
                        # Normal execution
                        exec(code, self.globals, self.locals)
                except:  # noqa: E722
                    # If parsing fails, just execute the code as is
                    exec(code, self.globals, self.locals)

            # Get output
            output = stdout.getvalue()
            if stderr.getvalue():
                output += "\n" + stderr.getvalue()

        except Exception as e:
            # Capture exception information
            output = f"Error: {type(e).__name__}: {str(e)}\n"
            output += traceback.format_exc()

        if return_value is not None:
            output += "\n\n" + str(return_value)

        return output


code_executor = SimpleCodeExecutor(
    # give access to our functions defined above
    locals={
        "add": add,
        "subtract": subtract,
        "multiply": multiply,
        "divide": divide,
    },
    globals={
        # give access to all builtins
        "__builtins__": __builtins__,
    },
)

agent = CodeActAgent(
    code_execute_fn=code_executor.execute,
    llm=llm,
    tools=[add, subtract, multiply, divide],
)

# context to hold the agent's session/state/chat history
ctx = Context(agent)


async def run_agent_verbose(agent, ctx, query):
    handler = agent.run(query, ctx=ctx)
    print(f"User:  {query}")
    async for event in handler.stream_events():
        if isinstance(event, ToolCallResult):
            print(f"\n-----------\nCode execution result:\n{event.tool_output}")
        elif isinstance(event, ToolCall):
            print(f"\n-----------\nParsed code:\n{event.tool_kwargs['code']}")
        elif isinstance(event, AgentStream):
            print(f"{event.delta}", end="", flush=True)

    return await handler


async def main() -> None:
    response = await run_agent_verbose(agent, ctx, "Calculate the sum of all numbers from 1 to 10")
    print("\n" + str(response))
    response = await run_agent_verbose(agent, ctx, "Add 5 and 3, then multiply the result by 2")
    print("\n" + str(response))
    for i, messages in enumerate(llm.calls):
        print(f"-- LLM call {i + 1}:", [m.role.value for m in messages])
        print("   last:", (messages[-1].content or "").replace("\n", " | ")[:120])


asyncio.run(main())
