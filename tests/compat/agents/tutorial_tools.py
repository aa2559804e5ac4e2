"""understanding/agent/tools.md: a LlamaHub tool spec's tools with two functions added.

Filled in: the scripted LLM for OpenAI, a stub tool spec for Yahoo Finance's (same method
name and docstring); the guide's code runs in main() as it shows.
"""

import asyncio

from _llm import ScriptedLLM, call, show_calls
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.tools.tool_spec.base import BaseToolSpec

llm = ScriptedLLM(
    [call("stock_basic_info", "c1", ticker="NVDA"), "NVIDIA's current stock price is $135.40."]
)


class YahooFinanceToolSpec(BaseToolSpec):
    """Stand-in for llama_index.tools.yahoo_finance.YahooFinanceToolSpec (no network)."""

    spec_functions = ["stock_basic_info"]

    def stock_basic_info(self, ticker: str) -> str:
        """
        Return the basic info of the given ticker symbol.

        Args:
          ticker (str): the stock ticker to be given to yfinance

        """
        return f"Info: {{'symbol': '{ticker}', 'currentPrice': 135.4}}"


def multiply(a: float, b: float) -> float:
    """Multiply two numbers and returns the product"""
    return a * b


def add(a: float, b: float) -> float:
    """Add two numbers and returns the sum"""
    return a + b


finance_tools = YahooFinanceToolSpec().to_tool_list()
finance_tools.extend([multiply, add])

workflow = FunctionAgent(
    name="Agent",
    description="Useful for performing financial operations.",
    llm=llm,
    tools=finance_tools,
    system_prompt="You are a helpful assistant.",
)


async def main():
    response = await workflow.run(user_msg="What's the current stock price of NVIDIA?")
    print(response)
    show_calls(llm)
    print(llm.tools_offered)


if __name__ == "__main__":
    asyncio.run(main())
