"""Optimal sparse regression trees (OSRT) on binarised features."""
