"""Red-teaming a role bot: ``run.py`` holds and judges the conversations
(``rolecall redteam``), ``slang.py`` rewrites a user's turn with slang for the slang
attack, ``report.py`` and ``html.py`` write a run's report, ``compare.py`` compares runs of
bot versions (``rolecall redteam-compare``). Every conversation is one
``records.RedteamConversation`` line of ``conversations.jsonl``, written by ``run.py`` and
read through that model by the report and the web app."""
