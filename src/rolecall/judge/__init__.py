"""LLM judges: one prompt template + format_input + parse_output each; voting."""
