# The two commands of the README. Both set up .venv on first use (scripts/setup.sh).
.PHONY: demo test setup

setup:
	@bash scripts/setup.sh

demo: setup
	@.venv/bin/rolecall demo

test: setup
	@.venv/bin/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)
