"""Measurements of datasets and models: each module computes one kind of number.

``stats``: dataset statistics (the NAACL 2022 paper's Table 2) with distinct-n, counted in
eojeol (whitespace words) or Kiwi morphemes.
"""
