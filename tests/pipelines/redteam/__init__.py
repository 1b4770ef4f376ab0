"""Tests of pipelines/redteam/."""
