"""LLM components behind small interfaces, through the official ``openai`` client.

Every component works with any OpenAI-compatible server (base URL, key and model from
:class:`~matching.llm.config.LLMConfig`).
"""
