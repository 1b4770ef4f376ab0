"""Generation stages: whole dialogues (NAACL 2022) and toxic rewrites (K/DA)."""
