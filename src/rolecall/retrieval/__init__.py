"""What every search in rolecall is built from: Kiwi content morphemes as search tokens
(``tokens``), BM25 (``bm25``: the K/DA slang index and the bot's lexical stage) and the
two bundled sentence encoders' vectors (``sentence_vectors``: USE multilingual v3;
``e5_vectors``: multilingual-e5-small), read by the slang index's dense half, the
dialogue models' backbones and the user-turn checks. The K/DA slang index itself is
``rolecall.slang``; the bot's response selection is ``rolecall.serve``.
"""
