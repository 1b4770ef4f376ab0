"""Judges: what scores a turn, a dialogue or a pair, and where each kind of judge lives.

A judge gives one verdict on one item; every kind answers with the labels of its task's
LLM judge, so panels mix kinds and vote (``voting.py``). Here, in this package:

- LLM judges, one prompt template + ``format_input`` + ``parse_output`` each, scored by
  label words or read from a JSON answer (``labels.py``): the out-of-bounds judge of a
  system turn (``out_of_bounds.py``), run turn by turn over generated dialogues
  (``dialogues.py``); K/DA's two pair filters, consistency and implicit offensiveness
  (``pair_filters.py``), run in order as panels (``filtering.py``);
- rule judges on Kiwi morphemes, no LLM (``rules:NAME``: ``rules/``);
- votes and panels (``voting.py``: ``DirectJudge``, the one majority rule);
- hand-written out-of-bounds turns, the gold set the judges are measured on
  (``written_out_of_bounds.py``).

Elsewhere, on the floor its parts need:

- trained judges (``classifier:PATH``): ``train/judges.py`` (TF-IDF and encoder
  classifiers as ``DirectJudge``s), ``train/kda_judges.py`` (the K/DA judges' data and
  training);
- judge strings and panels (what ``-m`` and a config's ``models`` name) and the judges a
  pipeline uses when none is named: ``pipelines/judges.py``, ``pipelines/default_judges.py``;
- G-Eval's 1-5 scores of K/DA pairs: ``eval/geval.py``;
- the bot's own judges at serving time, the reply guard and the user-turn checks:
  ``serve/`` (trained by ``train/classifier.py`` and ``train/user_checks.py``).
"""
