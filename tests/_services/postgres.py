"""Placeholder until the fixture lands."""
