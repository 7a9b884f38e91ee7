"""Symbolic quantile regression (SQR) on the native symbolic-regression engine."""
