# The two commands of the README. Both set up .venv on first use (scripts/setup.sh).
# A command killed by a signal (a crash in a native library) gets a line that says so.
.PHONY: demo test test-fast setup browser

setup:
	@bash scripts/setup.sh

# The browser tests need Debian's chromium and a Korean font; only the tests set them up.
browser:
	@bash scripts/browser.sh

demo: setup
	@.venv/bin/rolecall demo $(DEMO_ARGS); rc=$$?; \
	  .venv/bin/python -m rolecall.llm.probe --signal-note $$rc; exit $$rc

# The docs build prints nothing unless it fails. Not --quiet: mkdocs 1.6 then drops the
# warnings that --strict counts, and a broken link passes.
test: setup browser
	@.venv/bin/ruff check src tests bench || { \
	  echo "lint failed: .venv/bin/ruff check --fix src tests bench fixes most of it" >&2; exit 1; }
	@log=$$(.venv/bin/ruff format --check src tests bench 2>&1) || { echo "$$log" >&2; \
	  echo "format check failed: .venv/bin/ruff format src tests bench formats them" >&2; exit 1; }
	@site=$$(mktemp -d); log=$$(NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict \
	  --site-dir "$$site" 2>&1); rc=$$?; rm -rf "$$site"; [ $$rc = 0 ] || { echo "$$log" >&2; \
	  echo "docs build failed: fix the warnings above (.venv/bin/mkdocs serve shows the site)" >&2; \
	  exit 1; }
	@.venv/bin/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS); rc=$$?; \
	  .venv/bin/python -m rolecall.llm.probe --signal-note $$rc; exit $$rc

# The edit-test loop (docs/testing.md): the tests not marked slow, no lint or docs build.
test-fast: setup browser
	@.venv/bin/python -m pytest -q -p no:cacheprovider -m "not slow" $(PYTEST_ARGS)
