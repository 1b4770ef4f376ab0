"""rolecall: safe, role-specified Korean chatbots from LLM-generated, LLM-filtered data."""

__version__ = "0.1.0"
